import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MongoNetworkError } from 'mongodb';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { DriverConnectionClass } from '../../platform/mongo/driver-guard.js';
import { connectMongo } from '../../platform/mongo/mongo.js';

const ADMIN = { db: 'admin', collection: '$cmd', toString: () => 'admin.$cmd' };

/** A socket connected to the test database (the embedded FerretDB, or the first host of a mongodb:// MONGODB_URI). */
async function databaseSocket(): Promise<net.Socket> {
  const host = /^mongodb:\/\/(?:[^@/]*@)?([^/,?]+)/.exec(inject('mongodbUri'))?.[1];
  if (!host) throw new Error('This test connects a socket itself: it needs a mongodb:// URI (not mongodb+srv://).');
  const [hostname, port] = host.startsWith('[') ? [host.slice(1, host.indexOf(']')), host.split(']:')[1]] : host.split(':');
  const socket = net.connect({ host: hostname, port: Number(port || 27017) });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** A driver connection over `socket`, speaking OP_MSG as after its handshake (FerretDB answers no legacy OP_QUERY but the handshake). */
function connectionOver(socket: net.Socket, id: number) {
  const connection = new DriverConnectionClass(socket, { id, generation: 0 });
  connection.hello = { ok: 1, isWritablePrimary: true, minWireVersion: 0, maxWireVersion: 17 };
  return connection;
}

/** The command's outcome, or 'still waiting' after `ms`. */
const settledWithin = (command: Promise<unknown>, ms: number) =>
  Promise.race([
    command.then(
      () => 'answered',
      (error: unknown) => error,
    ),
    new Promise((resolve) => setTimeout(() => resolve('still waiting'), ms)),
  ]);

/** The reproduction written for the driver's maintainers (docs/database.md), run without the guard in a process of its own. */
const REPRODUCTION = fileURLToPath(new URL('../../scripts/repro/mongodb-write-after-close.mjs', import.meta.url));

describe("the MongoDB driver's writes on a closing connection", () => {
  const sockets: net.Socket[] = [];
  // Guarded as every service's is: by connecting through connectMongo (the guard is process-wide).
  beforeAll(async () => {
    const mongo = await connectMongo(inject('mongodbUri'), 'tguard_');
    await mongo.close();
  });
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
  });

  it('fails a command written after the socket closed but before the driver heard of it, instead of waiting forever', async () => {
    const socket = await databaseSocket();
    sockets.push(socket);
    const connection = connectionOver(socket, 1);
    expect(await settledWithin(connection.command(ADMIN, { ping: 1 }), 5000)).toBe('answered');
    // The state a server's close leaves for a moment: the socket destroyed, its 'close' event not yet emitted.
    socket.destroy();
    expect(connection.closed).toBe(false);
    const outcome = await settledWithin(connection.command(ADMIN, { ping: 1 }), 5000);
    expect(outcome).toBeInstanceOf(MongoNetworkError);
    expect(connection.closed).toBe(true);
  });

  it('fails a command whose write was still waiting to drain when the socket closed', async () => {
    const socket = await databaseSocket();
    sockets.push(socket);
    const connection = connectionOver(socket, 3);
    // A write the socket keeps in its buffer (as under back-pressure), then the server's close.
    socket.write = () => false;
    const command = connection.command(ADMIN, { ping: 1 });
    setTimeout(() => socket.destroy(), 50);
    expect(await settledWithin(command, 5000)).toBeInstanceOf(MongoNetworkError);
    expect(connection.closed).toBe(true);
  });

  it('still answers commands on a live connection, one after another, and leaves no listener behind', async () => {
    const socket = await databaseSocket();
    sockets.push(socket);
    const connection = connectionOver(socket, 2);
    for (let i = 0; i < 20; i += 1) expect(await settledWithin(connection.command(ADMIN, { ping: 1 }), 5000)).toBe('answered');
    expect(socket.listenerCount('close')).toBe(1);
  });

  // A canary: when the driver fails such a command itself, this fails, and the guard (and the exact pin) can go.
  it('is still needed: without it, the driver waits forever on a command written in that moment', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [REPRODUCTION], { timeout: 20_000 });
    expect(JSON.parse(stdout)).toMatchObject({
      connectionClosedWhenWritten: false,
      connectionClosedAfterwards: true,
      command: 'still waiting after 3 s',
    });
  });

  // The guard wraps an internal method: a range would let `npm install` bring a release nobody ran these tests on.
  it('is written against the one driver version package.json pins exactly, the one installed', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const installed = (createRequire(import.meta.url)('mongodb/package.json') as { version: string }).version;
    expect(manifest.dependencies.mongodb).toMatch(/^\d+\.\d+\.\d+$/);
    expect(manifest.dependencies.mongodb).toBe(installed);
  });
});
