function transform(event, meta) {
  if (event.event === "A08" && !event.ward) return null; // updates without a ward change are noise
  event.origin = meta.origin;
  return event;
}
