import type { Db } from 'mongodb';
import { insertIfAbsent } from './mongo.js';
import type { OutboxEvent } from './outbox-event.js';
import { publishStored } from './outbox-relay.js';
import { newId } from './secrets.js';

export type { OutboxEvent } from './outbox-event.js';

/**
 * Writes an event to the subgraph's outbox collection. With an `id` derived from the state change
 * (say `<svcTransactionId>:return`) the write is an upsert, so a retry after a failure between the
 * state change and its event records the event once.
 */
export async function recordEvent(db: Db, type: string, audience: OutboxEvent['audience'], payload: Record<string, unknown>, id?: string): Promise<void> {
  const event: OutboxEvent = { _id: id ?? newId('evt_'), type, audience, payload, dtsCreated: new Date(), dtsPublished: null };
  // With an id, a retry finds the event stored already: it was published then, or the sweep will.
  if (id && !(await insertIfAbsent(db.collection<OutboxEvent>('outbox'), event))) return;
  if (!id) await db.collection<OutboxEvent>('outbox').insertOne(event);
  // Published at once by this process's relay; a relay's sweep publishes it if this process dies first.
  publishStored(db.databaseName, event);
}
