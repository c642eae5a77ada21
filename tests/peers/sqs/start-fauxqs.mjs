// start-fauxqs.mjs PORT_FILE: runs the fauxqs SQS emulator on 127.0.0.1 and a free port, which
// it writes to PORT_FILE once it listens. Stops on SIGTERM.
//
// Why not fauxqs' own CLI or startFauxqs(): both listen on 0.0.0.0 and log every request. And
// fauxqs updates its counters lazily: an expired visibility timeout or an elapsed DelaySeconds
// only takes effect inside ReceiveMessage, so GetQueueAttributes would report stale counts to
// a monitor that never receives. The timer pump below runs the store's own timer step (what
// ReceiveMessage runs) every 200 ms, as real SQS's timers would. It reaches into fauxqs' dist/
// files, so the fauxqs version is pinned in package.json.
import { writeFileSync, renameSync } from "node:fs";
import { buildApp } from "fauxqs";
import { SqsStore } from "./node_modules/fauxqs/dist/sqs/sqsStore.js";

const portFile = process.argv[2];
if (!portFile) {
  console.error("usage: start-fauxqs.mjs PORT_FILE");
  process.exit(2);
}
const sqsStore = new SqsStore();
const app = buildApp({ logger: false, stores: { sqsStore } });
await app.listen({ host: "127.0.0.1", port: 0 });
const pump = setInterval(() => sqsStore.processAllTimers(), 200);
writeFileSync(portFile + ".tmp", String(app.server.address().port));
renameSync(portFile + ".tmp", portFile);

process.on("SIGTERM", async () => {
  clearInterval(pump);
  await app.close();
  process.exit(0);
});
