import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';
import { Outbox } from '../../../../platform/messaging/outbox.js';
import type { OutboxEvent } from '../../../../platform/contracts/events.js';

/** What decides a card message (the schema's CardDecisionSource). */
export const CARD_DECIDERS = ['card', 'restriction', 'aggregator', 'defaultStrategy', 'funds'] as const;

/**
 * A decided card message: the authorization log, and at once the `card.authorization` event its
 * decision causes (its outbox fields), so that one insert stores the claim on the messageId, the
 * decision and what follows from it; `dtsPublished` marks it carried to all that follows
 * (`decisionFollowers`). `_id` is the messageId.
 */
export type CardMessageDocument = OutboxEvent<'card.authorization'> & {
  /** Every stored message is decided: the message is claimed by the insert of its decision. */
  state: 'decided';
  /**
   * Unique: the messageId, or `reverses:<original's messageId>` on a reversal that credits an
   * original back or releases its hold, so that of two reversals of one original only one is stored as doing it.
   */
  bindingKey: string;
  /** On a reversal that credits back or releases a hold: the original it reverses. */
  reverses: string | null;
  /** On an approved 0100, 0200 or 0220: the hold it placed on the account in payments. */
  holdId: string | null;
  messageType: string;
  actionType: 'request' | 'advice';
  SvcCardId: string;
  SvcUserId: string | null;
  svcAggregatorId: string | null;
  /** In `currency`'s minor units, as asked. */
  amount: MinorUnits;
  currency: string;
  stan: string;
  rrn: string;
  originalStan: string | null;
  responseCode: string;
  decidedBy: (typeof CARD_DECIDERS)[number];
  reason: string;
  transactionId: string | null;
  decisionMs: number;
  dtsReceived: Date;
  /** The advice webhook's payload, on an advice to a card program's aggregator: enqueued once it is handled. */
  advice: Record<string, unknown> | null;
};

export function cardMessagesCollection(db: Db): Collection<CardMessageDocument> {
  return db.collection<CardMessageDocument>('cardMessages');
}

/**
 * The indexes of the decision (a reversal's original by card and stan; the binding), of the recent
 * messages of a card program or a user, newest first (`AuthorizationHistory`), and of the message
 * outbox's sweeps.
 */
export async function createCardMessageIndexes(db: Db): Promise<void> {
  const messages = cardMessagesCollection(db);
  await messages.createIndexes([{ key: { bindingKey: 1 }, unique: true }]);
  await messages.createIndex({ SvcCardId: 1, stan: 1 });
  await messages.createIndex({ svcAggregatorId: 1, dtsReceived: -1, _id: -1 });
  await messages.createIndex({ SvcUserId: 1, dtsReceived: -1, _id: -1 });
  await Outbox.createIndexes(db, messages.collectionName, ['dtsPublished']);
}
