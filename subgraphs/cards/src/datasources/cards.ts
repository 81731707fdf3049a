import type { Collection, Db } from 'mongodb';

/** A stored card. Only the masked number and the last four digits are kept, never the full PAN. */
export interface CardDocument {
  _id: string;
  SvcCardId: string;
  SvcAccountId: string;
  SvcUserId: string;
  typeId: string | null;
  cardIdBO: string | null;
  accountIdBO: string | null;
  backOfficeId: string | null;
  backOfficeName: string | null;
  status: 'active' | 'blocked';
  isActive: boolean;
  isActivated: boolean;
  isClosed: boolean;
  num: string;
  lastFour: string;
  dtsOpened: Date | null;
  dtsExpiry: Date | null;
  dtsUpdated: Date | null;
  dtsActivated: Date | null;
  currency: string | null;
  name_on_card: string | null;
  image: string | null;
  primaryUserSvcUserId: string | null;
  name: string | null;
  isMain: boolean;
  /** When the card was last made main: the latest of racing changes wins. */
  dtsMainSet: Date | null;
  /** The aggregator whose program issued the card, whose webhook decides its authorizations. */
  svcAggregatorId: string | null;
  isTestCard: boolean;
}

export function cardsCollection(db: Db): Collection<CardDocument> {
  return db.collection<CardDocument>('cards');
}

/** An aggregator's webhook for card authorizations. `_id` is the svcAggregatorId. */
export interface WebhookConfigDocument {
  _id: string;
  url: string;
  secret: string;
  defaultStrategy: 'approve' | 'decline';
  timeoutMs: number;
  dtsUpdated: Date;
  /** Consecutive failed advice deliveries; reset by a delivered one. */
  webhookFailures?: number;
  /** Set when a run of failed deliveries disabled the endpoint (advices pause until it is enabled). */
  dtsWebhookDisabled?: Date | null;
}

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
  amount: number;
  currency: string;
  stan: string;
  rrn: string;
  originalStan: string | null;
  responseCode: string;
  decidedBy: string;
  reason: string;
  transactionId: string | null;
  decisionMs: number;
  dtsReceived: Date;
}

export function webhookConfigsCollection(db: Db): Collection<WebhookConfigDocument> {
  return db.collection<WebhookConfigDocument>('webhookConfigs');
}

export function cardMessagesCollection(db: Db): Collection<CardMessageDocument> {
  return db.collection<CardMessageDocument>('cardMessages');
}
