import type { Db } from 'mongodb';
import { nudgeRelays } from './outbox-relay.js';
import { newId } from './secrets.js';

/** An event written in the same write path as the state change it reports, for the relay to publish. */
export interface OutboxEvent {
  _id: string;
  type: string;
  /** Who may see the event: the aggregator or user it concerns. */
  audience: { svcAggregatorId?: string; SvcUserId?: string; svcMerchantId?: string };
  payload: Record<string, unknown>;
  dtsCreated: Date;
  /** Set by the relay once published on the event bus. */
  dtsPublished: Date | null;
  /** Set once forwarded through the graph to the subgraph that consumes it (ach.* events go to compliance). */
  dtsForwarded?: Date | null;
}

/**
 * Writes an event to the subgraph's outbox collection. With an `id` derived from the state change
 * (say `<svcTransactionId>:return`) the write is an upsert, so a retry after a failure between the
 * state change and its event records the event once.
 */
export async function recordEvent(db: Db, type: string, audience: OutboxEvent['audience'], payload: Record<string, unknown>, id?: string): Promise<void> {
  const event = { type, audience, payload, dtsCreated: new Date(), dtsPublished: null };
  if (id) await db.collection<OutboxEvent>('outbox').updateOne({ _id: id }, { $setOnInsert: event }, { upsert: true });
  else await db.collection<OutboxEvent>('outbox').insertOne({ _id: newId('evt_'), ...event });
  // Published at once by this process's relay; a relay's timer publishes it if this process dies first.
  nudgeRelays(db.databaseName);
}
