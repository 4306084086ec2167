// node send.cjs <host> <port> <messages.jsonl>
// Sends each message (a JSON string per line, segments ended by \r) over
// one MLLP connection with node-hl7-client, waiting for each ACK, and
// prints {"acks":[{"code","id"}...]} on stdout.
const { Client, Message } = require("node-hl7-client");
const fs = require("fs");

const [host, port, file] = process.argv.slice(2);
const texts = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const acks = [];
let resolveAck;
const client = new Client({ host });
const conn = client.createConnection({ port: Number(port), waitAck: true }, async (res) => {
  const m = res.getMessage();
  acks.push({ code: m.get("MSA.1").toString(), id: m.get("MSA.2").toString() });
  if (resolveAck) resolveAck();
});

(async () => {
  for (const text of texts) {
    const got = new Promise((r) => (resolveAck = r));
    await conn.sendMessage(new Message({ text }));
    await Promise.race([got, new Promise((r) => setTimeout(r, 10000))]);
  }
  process.stdout.write(JSON.stringify({ acks }) + "\n");
  await conn.close();
  process.exit(0);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
