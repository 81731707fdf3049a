import WebSocket from 'ws';

/** A graphql-ws message as the server sends it. */
export interface Frame {
  id?: string;
  type: string;
  payload?: unknown;
}

/** How a socket closed, and when (performance.now()). */
export interface Closed {
  code: number;
  reason: string;
  at: number;
}

/** A graphql-ws connection driven message by message, recording every frame and how it closed. */
export interface RawConnection {
  socket: WebSocket;
  frames: Frame[];
  closed: Promise<Closed>;
  /** Sends a subscribe message. */
  subscribe: (id: string, query: string) => void;
  /** Sends a complete message (the client stops a subscription). */
  complete: (id: string) => void;
  /** The first `error` or `next` frame for `id`; fails when none arrives in time or the socket closes first. */
  answer: (id: string, timeoutMs?: number) => Promise<Frame>;
  close: () => Promise<void>;
}

/**
 * Opens a graphql-ws connection with `params` as the `connection_init` payload and resolves once
 * it is acknowledged, or with how the server closed it instead.
 */
export async function openConnection(url: string, params: Record<string, string>): Promise<RawConnection | Closed> {
  const socket = new WebSocket(url, 'graphql-transport-ws');
  const frames: Frame[] = [];
  const closed = new Promise<Closed>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString(), at: performance.now() })),
  );
  socket.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString()) as Frame));
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  socket.send(JSON.stringify({ type: 'connection_init', payload: params }));
  const deadline = Date.now() + 10_000;
  const connection: RawConnection = {
    socket,
    frames,
    closed,
    subscribe: (id, query) => socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } })),
    complete: (id) => socket.send(JSON.stringify({ id, type: 'complete' })),
    answer: async (id, timeoutMs = 10_000) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const frame = frames.find((f) => f.id === id && (f.type === 'error' || f.type === 'next'));
        if (frame) return frame;
        if (socket.readyState !== socket.OPEN) throw new Error(`the socket closed before an answer to ${id}`);
        if (Date.now() > until) throw new Error(`no answer to ${id} in time`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    close: async () => {
      if (socket.readyState === socket.CLOSED) return;
      socket.close();
      await closed;
    },
  };
  for (;;) {
    if (frames.some((frame) => frame.type === 'connection_ack')) return connection;
    if (socket.readyState === socket.CLOSED || socket.readyState === socket.CLOSING) return closed;
    if (Date.now() > deadline) throw new Error('no connection_ack in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The connection, failing with how it closed when the server refused it. */
export function accepted(connection: RawConnection | Closed): RawConnection {
  if ('code' in connection) throw new Error(`connection refused: ${connection.code} ${connection.reason}`);
  return connection;
}

/** The closing of a connection the server refused; fails when it was acknowledged. */
export async function refused(connection: RawConnection | Closed): Promise<Closed> {
  if ('code' in connection) return connection;
  await connection.close();
  throw new Error('the connection was acknowledged');
}

/** The first error of an `error` frame's payload. */
export function firstError(frame: Frame): { message: string; extensions?: Record<string, unknown> } {
  if (frame.type !== 'error') throw new Error(`expected an error frame, got ${JSON.stringify(frame).slice(0, 300)}`);
  return (frame.payload as Array<{ message: string; extensions?: Record<string, unknown> }>)[0]!;
}
