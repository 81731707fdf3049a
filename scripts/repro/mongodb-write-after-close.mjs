// Reproduction for the MongoDB Node.js driver's maintainers (docs/database.md, "The driver guard").
// Run: `node scripts/repro/mongodb-write-after-close.mjs` with only `mongodb` installed. No database
// is needed: a bare TCP listener stands in for the server, since the command never gets an answer.
//
// A socket the peer has closed is destroyed at once, but emits 'close' (which marks the driver's
// Connection closed) only a moment later. A command written in between gets `false` from
// `socket.write` and the driver awaits a 'drain' that never comes; when that command is the server
// monitor's heartbeat, the client never sees the server again. The script puts a Connection in that
// moment and prints what happened to the command. Exit status: 0 when the command is still waiting
// after 3 s (the hang reproduced), 1 when the driver failed it (what it should do).
import { once } from 'node:events';
import { createRequire } from 'node:module';
import net from 'node:net';

const require = createRequire(import.meta.url);
const { version } = require('mongodb/package.json');
const { Connection } = require('mongodb/lib/cmap/connection.js');

const server = net.createServer(() => {}).listen(0, '127.0.0.1');
await once(server, 'listening');
const socket = net.connect(server.address().port, '127.0.0.1');
await once(socket, 'connect');

const connection = new Connection(socket, { id: 1, generation: 0 });
// As after a handshake with a server that speaks OP_MSG.
connection.hello = { ok: 1, isWritablePrimary: true, minWireVersion: 0, maxWireVersion: 17 };
const ns = { db: 'admin', collection: '$cmd', toString: () => 'admin.$cmd' };

// What net.Socket does when the peer ends the connection: destroyed now, 'close' on a later turn.
socket.destroy();
const closedBeforeWrite = connection.closed;
const command = connection.command(ns, { ping: 1 });
const outcome = await Promise.race([
  command.then(
    () => 'answered',
    (error) => `failed: ${error.name}: ${error.message}`,
  ),
  new Promise((resolve) => setTimeout(resolve, 3000, 'still waiting after 3 s')),
]);
console.log(
  JSON.stringify({
    node: process.version,
    mongodb: version,
    connectionClosedWhenWritten: closedBeforeWrite,
    socketClosed: socket.closed,
    connectionClosedAfterwards: connection.closed,
    command: outcome,
  }),
);
server.close();
process.exit(outcome.startsWith('still waiting') ? 0 : 1);
