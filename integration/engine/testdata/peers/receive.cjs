// node receive.cjs <port> <out.jsonl>
// An MLLP receiver with node-hl7-server: appends {"id","mrn","raw"} per
// message to out.jsonl and answers AA. Prints READY once listening.
const { Server } = require("node-hl7-server");
const fs = require("fs");

const [port, out] = process.argv.slice(2);
const server = new Server({ bindAddress: "127.0.0.1" });
const inbound = server.createInbound({ port: Number(port) }, async (req, res) => {
  const m = req.getMessage();
  fs.appendFileSync(out, JSON.stringify({ id: m.get("MSH.10").toString(), mrn: m.get("PID.3.1").toString(), raw: m.toString() }) + "\n");
  await res.sendResponse("AA");
});
inbound.on("listen", () => process.stdout.write("READY\n"));
process.on("SIGTERM", async () => {
  await inbound.close();
  process.exit(0);
});
