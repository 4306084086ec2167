// The EMR wants its own facility code in MSH-6 and the patient's name
// upper-cased; test messages (MSH-11 = T) never reach it.
function toEmr(msg, meta) {
  if (msg.get("MSH-11") === "T") return null; // filtered: a test message
  if (!msg.get("PID-3.1")) quarantine("no MRN in PID-3.1");
  msg.set("MSH-6", "EMR");
  msg.set("PID-5.1", msg.get("PID-5.1").toUpperCase());
  return msg;
}

// The archive keeps the message exactly as received.
function toArchive(msg, meta) {
  return msg;
}

// Notifications get a small JSON event per ADT message.
function toNotification(msg, meta) {
  return {
    event: msg.get("MSH-9.2"),
    mrn: msg.get("PID-3.1"),
    name: msg.get("PID-5.2") + " " + msg.get("PID-5.1"),
    ward: msg.get("PV1-3.1") || null,
    at: msg.get("EVN-2") || msg.get("MSH-7"),
    received: meta.receivedAt,
  };
}
