import type { Collection, Db } from 'mongodb';
import type { Logger } from '../../../platform/logger.js';
import type { Notifier } from '../../../platform/notify.js';
import { deliverWebhook } from '../../../platform/webhooks.js';
import { merchantsCollection } from './datasources/merchants.js';
import { paymentLinksCollection } from './datasources/payment-links.js';

/** Attempts before a delivery is given up (about an hour and a half with the backoff). */
export const MAX_DELIVERY_ATTEMPTS = 8;
const WEBHOOK_TIMEOUT_MS = 5000;
/** A claimed delivery is retried after this long if its sender died mid-attempt. */
const LEASE_MS = 60_000;

/** One message that must reach a merchant's webhook or a customer's inbox, with its attempts. */
export interface DeliveryDocument {
  _id: string;
  kind: 'webhook' | 'email';
  /** The merchant whose webhook secret signs a webhook. */
  svcMerchantId: string;
  /** The webhook URL or the email address. */
  to: string;
  /** A payment link's delivery: sent only while that link is still Sent (not after a cancel or expiry). */
  whileLinkSent?: string;
  /** A webhook's JSON body; an email's subject and text. */
  payload: Record<string, unknown>;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastError: string | null;
  dtsCreated: Date;
  dtsNextAttempt: Date;
  dtsDelivered: Date | null;
}

export function deliveriesCollection(db: Db): Collection<DeliveryDocument> {
  return db.collection<DeliveryDocument>('deliveries');
}

/**
 * Webhooks and emails of the payments domain (payment link sent, ACH payment updates), stored
 * before they are attempted, retried with exponential backoff until delivered or given up. A
 * webhook counts as delivered on any 2xx reply; its `webhook-id` is the delivery id, the same on
 * every attempt, so a receiver can drop repeats.
 */
export class Deliveries {
  private readonly deliveries: Collection<DeliveryDocument>;

  constructor(private readonly db: Db, private readonly notifier: Notifier, private readonly logger: Logger, private readonly allowInternal: boolean) {
    this.deliveries = deliveriesCollection(db);
  }

  /** Stores a delivery (once per id) and attempts it now. */
  async enqueue(delivery: Pick<DeliveryDocument, '_id' | 'kind' | 'svcMerchantId' | 'to' | 'payload' | 'whileLinkSent'>): Promise<DeliveryDocument | null> {
    const now = new Date();
    await this.deliveries.updateOne(
      { _id: delivery._id },
      { $setOnInsert: { ...delivery, status: 'pending', attempts: 0, lastError: null, dtsCreated: now, dtsNextAttempt: now, dtsDelivered: null } },
      { upsert: true },
    );
    return this.attempt(delivery._id);
  }

  /** Attempts every due delivery (the recurring task). */
  async retryDue(): Promise<void> {
    const due = await this.deliveries.find({ status: 'pending', dtsNextAttempt: { $lte: new Date() } }, { projection: { _id: 1 } }).limit(50).toArray();
    for (const { _id } of due) await this.attempt(_id);
  }

  /** One attempt; claimed first, so two processes never send the same delivery at once. */
  private async attempt(id: string): Promise<DeliveryDocument | null> {
    const now = new Date();
    const claimed = await this.deliveries.findOneAndUpdate(
      { _id: id, status: 'pending', dtsNextAttempt: { $lte: now } },
      { $set: { dtsNextAttempt: new Date(now.getTime() + LEASE_MS) }, $inc: { attempts: 1 } },
      { returnDocument: 'after' },
    );
    if (!claimed) return null;
    if (claimed.whileLinkSent) {
      const link = await paymentLinksCollection(this.db).findOne({ _id: claimed.whileLinkSent }, { projection: { status: 1 } });
      if (link?.status !== 'Sent') {
        await this.deliveries.updateOne({ _id: id }, { $set: { status: 'failed', lastError: `not sent: the link is ${link?.status ?? 'gone'}` } });
        return null;
      }
    }
    let error: string | null = null;
    try {
      error = await this.send(claimed);
    } catch (caught) {
      error = (caught as Error).message;
    }
    const update = error === null
      ? { status: 'delivered' as const, dtsDelivered: new Date(), lastError: null }
      : claimed.attempts >= MAX_DELIVERY_ATTEMPTS
        ? { status: 'failed' as const, lastError: error }
        : { lastError: error, dtsNextAttempt: new Date(Date.now() + 30_000 * 2 ** (claimed.attempts - 1)) };
    await this.deliveries.updateOne({ _id: id }, { $set: update });
    this.logger[error ? 'warn' : 'info']('delivery attempted', { deliveryId: id, kind: claimed.kind, attempt: claimed.attempts, ...(error ? { error } : {}) });
    return { ...claimed, ...update };
  }

  /** Sends one delivery; the error text, or null when it arrived. */
  private async send(delivery: DeliveryDocument): Promise<string | null> {
    if (delivery.kind === 'email') {
      await this.notifier.email({ to: delivery.to, subject: String(delivery.payload.subject), text: String(delivery.payload.text) });
      return null;
    }
    const merchant = await merchantsCollection(this.db).findOne({ _id: delivery.svcMerchantId });
    if (!merchant) return 'the merchant no longer exists';
    const outcome = await deliverWebhook({ url: delivery.to, secret: merchant.webhookSecret }, delivery.payload, WEBHOOK_TIMEOUT_MS, { allowInternal: this.allowInternal, id: delivery._id });
    if (outcome.kind === 'reply') return outcome.status >= 200 && outcome.status < 300 ? null : `the receiver answered ${outcome.status}`;
    return outcome.kind === 'timeout' ? 'the receiver did not answer in time' : outcome.message;
  }
}
