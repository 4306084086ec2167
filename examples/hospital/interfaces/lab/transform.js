// One JSON document per ORU: the patient and every OBX result.
function transform(msg, meta) {
  if (msg.get("MSH-9.1") !== "ORU") quarantine("not a result message: " + msg.get("MSH-9"));
  return {
    id: meta.id,
    mrn: msg.get("PID-3.1"),
    patient: { family: msg.get("PID-5.1"), given: msg.get("PID-5.2"), born: msg.get("PID-7") },
    order: msg.get("OBR-4.2") || msg.get("OBR-4.1"),
    observed: msg.get("OBR-7"),
    results: msg.segments("OBX").map(function (obx) {
      return {
        code: obx.get("3.1"),
        name: obx.get("3.2"),
        value: obx.get("5"),
        units: obx.get("6.1") || null,
        range: obx.get("7") || null,
        flag: obx.get("8") || null,
      };
    }),
  };
}
