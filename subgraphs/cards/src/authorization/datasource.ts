import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** What decides a card message (the schema's CardDecisionSource). */
export const CARD_DECIDERS = ['card', 'restriction', 'aggregator', 'defaultStrategy'] as const;

/** A card message: the authorization log. `_id` is the messageId; `pending` while it is being decided. */
export interface CardMessageDocument {
  _id: string;
  state: 'pending' | 'decided';
  /** On an approved purchase: the reversal that credited it back. */
  reversedBy: string | null;
  messageType: string;
  actionType: 'request' | 'advice';
  SvcCardId: string;
  SvcUserId: string | null;
  svcAggregatorId: string | null;
  /** In `currency`'s minor units. */
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
}

export function cardMessagesCollection(db: Db): Collection<CardMessageDocument> {
  return db.collection<CardMessageDocument>('cardMessages');
}
