import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { MongoNetworkError } from 'mongodb';

/** The part of the driver's internal Connection class the guard touches. */
export interface DriverConnection {
  socket: Socket;
  id: number | '<monitor>';
  address: string;
  closed: boolean;
  /** Closes the connection and fails what is in flight on it with `error`. */
  onError(error: Error): void;
  writeCommand(command: unknown, options: unknown): Promise<void>;
}

/** The driver's internal Connection class (the pooled connections and the server monitor's alike); exported for its test only. */
export const DriverConnectionClass = (
  createRequire(import.meta.url)('mongodb/lib/cmap/connection.js') as {
    Connection: {
      new (
        stream: Socket,
        options: { id: number; generation: number },
      ): DriverConnection & {
        hello: Record<string, unknown> | null;
        command(
          ns: { db: string; collection: string | undefined; toString(): string },
          command: Record<string, unknown>,
          options?: Record<string, unknown>,
        ): Promise<unknown>;
      };
      prototype: DriverConnection;
    };
  }
).Connection;

let guarded = false;

/**
 * Makes a command written to a connection whose socket has just been closed fail, as a network
 * error, instead of hanging. The MongoDB Node.js driver (7.9) writes a command and, when
 * `socket.write` returns false, waits for 'drain'. A socket the server has
 * closed is destroyed at once, but its 'close' event (which marks the driver's Connection closed)
 * comes a moment later; a command written in between gets false from `write` and waits for a
 * 'drain' that never comes. When that command is the server monitor's heartbeat, the client
 * never sees the server again: after a database restart every operation failed server selection
 * until the process restarted (found by test/scenarios/faults.e2e.ts; docs/database.md has the
 * reproduction, and test/platform/driver-guard.e2e.ts fails once the driver no longer needs this).
 * Idempotent; applies to every client in the process.
 */
export function guardDriverWrites(): void {
  if (guarded) return;
  guarded = true;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- the original, kept to be called with .call(this) by the wrapper below.
  const writeCommand = DriverConnectionClass.prototype.writeCommand;
  // The driver is pinned (package.json) to the version this was written against; a release that
  // moves the method must fail here, at start-up, rather than leave the hang back in place.
  if (typeof writeCommand !== 'function')
    throw new Error(
      'The MongoDB driver no longer has Connection.writeCommand: review platform/mongo/driver-guard.ts for this driver version.',
    );
  DriverConnectionClass.prototype.writeCommand = function (this: DriverConnection, command: unknown, options: unknown): Promise<void> {
    const { socket } = this;
    const written = writeCommand.call(this, command, options);
    return new Promise<void>((resolve, reject) => {
      const closed = () => {
        // As the driver does for a failed write: the connection is closed with the error, then the command fails.
        const error = new MongoNetworkError(`connection ${this.id} to ${this.address} closed`);
        this.onError(error);
        reject(error);
      };
      // Handled in every case, even when the socket has already closed: its rejection must not go unhandled.
      written.then(resolve, reject).finally(() => socket.off('close', closed));
      if (socket.closed) closed();
      else socket.once('close', closed);
    });
  };
}
