function mrn(msg) {
  return msg.get("PID-3.1");
}
