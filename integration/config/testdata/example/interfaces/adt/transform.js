function transform(msg, meta) {
  return msg;
}

function toNotification(msg, meta) {
  return { mrn: mrn(msg), event: msg.get("MSH-9.2") };
}
