import type { Collection, Db } from 'mongodb';
import { appError, ErrorCode } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logger.js';
import { insertIfAbsent } from '../../../platform/mongo.js';
import type { Notifier } from '../../../platform/notify.js';
import { recordEvent } from '../../../platform/outbox.js';
import { deliverWebhook } from '../../../platform/webhooks.js';
import { merchantsCollection } from './datasources/merchants.js';
import { paymentLinksCollection } from './datasources/payment-links.js';

const WEBHOOK_TIMEOUT_MS = 5000;
/** A claimed delivery is retried after this long if its sender died mid-attempt. */
const LEASE_MS = 60_000;
/** Retries due within this long are also timed in-process, not only by the periodic sweep. */
const TIMED_RETRY_MS = 60_000;
/** The longest a receiver's Retry-After may push an attempt back. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** One attempt in a delivery's log. */
export interface DeliveryAttemptDocument {
  number: number;
  dtsAttempted: Date;
  outcome: 'delivered' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** One message that must reach a merchant's webhook or a customer's inbox, with its attempts. */
export interface DeliveryDocument {
  _id: string;
  kind: 'webhook' | 'email';
  /** The merchant whose webhook secret signs a webhook. */
  svcMerchantId: string;
  svcAggregatorId: string;
  /** What it reports: payment_link.sent, ach_payment.updated. */
  eventType: string;
  /** The webhook URL or the email address. */
  to: string;
  /** A payment link's delivery: sent only while that link is still Sent (not after a cancel or expiry). */
  whileLinkSent?: string;
  /** A webhook's JSON body; an email's subject and text. */
  payload: Record<string, unknown>;
  /** `paused`: the merchant's endpoint is disabled; enabling it resumes the delivery. */
  status: 'pending' | 'delivered' | 'failed' | 'paused';
  attemptCount: number;
  /** Attempts made before the latest resend: the schedule starts again from there. */
  roundStart: number;
  attempts: DeliveryAttemptDocument[];
  lastError: string | null;
  dtsCreated: Date;
  dtsNextAttempt: Date | null;
  dtsDelivered: Date | null;
}

export function deliveriesCollection(db: Db): Collection<DeliveryDocument> {
  return db.collection<DeliveryDocument>('deliveries');
}

export interface DeliveryPolicy {
  /** Delays before each attempt of a round (WEBHOOK_RETRY_SCHEDULE). */
  scheduleMs: readonly number[];
  /** Consecutive failed webhook attempts that disable a merchant's endpoint (WEBHOOK_DISABLE_AFTER). */
  disableAfter: number;
  allowInternal: boolean;
}

/**
 * Webhooks and emails of the payments domain (payment link sent, ACH payment updates): stored
 * before they are attempted, then attempted on the configured schedule until delivered (any 2xx)
 * or given up, honouring a receiver's `Retry-After`. Every attempt is logged on the delivery and
 * is a `webhook.attempt` event. Its `webhook-id` is the delivery id, the same on every attempt,
 * so a receiver can drop repeats. A merchant endpoint that fails `disableAfter` times in a row is
 * disabled: its deliveries pause until it is enabled again. Pending deliveries survive restarts:
 * the periodic sweep picks up whatever is due.
 */
export class Deliveries {
  private readonly deliveries: Collection<DeliveryDocument>;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly db: Db, private readonly notifier: Notifier, private readonly logger: Logger, private readonly policy: DeliveryPolicy) {
    this.deliveries = deliveriesCollection(db);
  }

  /** Stores a delivery (once per id) and makes its first attempt after the schedule's first delay. */
  async enqueue(delivery: Pick<DeliveryDocument, '_id' | 'kind' | 'svcMerchantId' | 'svcAggregatorId' | 'eventType' | 'to' | 'payload' | 'whileLinkSent'>): Promise<DeliveryDocument | null> {
    const now = new Date();
    const first = this.policy.scheduleMs[0] ?? 0;
    await insertIfAbsent(this.deliveries, {
      ...delivery, status: 'pending', attemptCount: 0, roundStart: 0, attempts: [], lastError: null, dtsCreated: now, dtsDelivered: null, dtsNextAttempt: new Date(now.getTime() + first),
    });
    if (first > 0) return this.later(delivery._id, first);
    return this.attempt(delivery._id);
  }

  /** Attempts every due delivery (the recurring task). */
  async retryDue(): Promise<void> {
    const due = await this.deliveries.find({ status: 'pending', dtsNextAttempt: { $lte: new Date() } }, { projection: { _id: 1 } }).limit(50).toArray();
    for (const { _id } of due) await this.attempt(_id);
  }

  /** Sends a failed delivery again, from the first step of the schedule. */
  async resend(id: string): Promise<DeliveryDocument> {
    const current = await this.deliveries.findOne({ _id: id });
    if (!current) throw appError(ErrorCode.NOT_FOUND, `Delivery ${id} does not exist.`, { field: 'deliveryId' });
    const reset = await this.deliveries.findOneAndUpdate(
      { _id: id, status: 'failed' },
      { $set: { status: 'pending', roundStart: current.attemptCount, dtsNextAttempt: new Date() } },
      { returnDocument: 'after' },
    );
    if (!reset) throw appError(ErrorCode.CONFLICT, `Delivery ${id} is ${current.status}; only a failed delivery is sent again.`, { field: 'deliveryId' });
    return (await this.attempt(id)) ?? reset;
  }

  /** Re-enables a merchant's disabled endpoint and resumes its paused deliveries. */
  async enableEndpoint(svcMerchantId: string): Promise<void> {
    await merchantsCollection(this.db).updateOne({ _id: svcMerchantId }, { $set: { dtsWebhookDisabled: null, webhookFailures: 0 } });
    const paused = await this.deliveries.find({ svcMerchantId, status: 'paused' }, { projection: { _id: 1 } }).toArray();
    await this.deliveries.updateMany({ svcMerchantId, status: 'paused' }, { $set: { status: 'pending', dtsNextAttempt: new Date() } });
    // Resumed in the background, in order: the mutation answers at once.
    void (async () => {
      for (const { _id } of paused) await this.attempt(_id);
    })().catch((error: Error) => this.logger.warn('resuming deliveries failed', { svcMerchantId, error: error.message }));
  }

  /** Stops the in-process retry timers (the periodic sweep takes over after a restart). */
  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private later(id: string, delayMs: number): null {
    if (delayMs <= TIMED_RETRY_MS) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.attempt(id).catch((error: Error) => this.logger.warn('delivery attempt failed to run', { deliveryId: id, error: error.message }));
      }, delayMs);
      timer.unref();
      this.timers.add(timer);
    }
    return null;
  }

  /** One attempt; claimed first, so two processes never send the same delivery at once. */
  private async attempt(id: string): Promise<DeliveryDocument | null> {
    const now = new Date();
    const claimed = await this.deliveries.findOneAndUpdate(
      { _id: id, status: 'pending', dtsNextAttempt: { $lte: now } },
      { $set: { dtsNextAttempt: new Date(now.getTime() + LEASE_MS) }, $inc: { attemptCount: 1 } },
      { returnDocument: 'after' },
    );
    if (!claimed) return null;
    const merchant = await merchantsCollection(this.db).findOne({ _id: claimed.svcMerchantId });
    if (claimed.kind === 'webhook' && merchant?.dtsWebhookDisabled) {
      await this.deliveries.updateOne({ _id: id }, { $set: { status: 'paused', dtsNextAttempt: null }, $inc: { attemptCount: -1 } });
      return null;
    }
    if (claimed.whileLinkSent) {
      const link = await paymentLinksCollection(this.db).findOne({ _id: claimed.whileLinkSent }, { projection: { status: 1 } });
      if (link?.status !== 'Sent') {
        await this.deliveries.updateOne({ _id: id }, { $set: { status: 'failed', lastError: `not sent: the link is ${link?.status ?? 'gone'}`, dtsNextAttempt: null }, $inc: { attemptCount: -1 } });
        return null;
      }
    }
    const started = performance.now();
    let result: { error: string | null; httpStatus: number | null; retryAfterMs?: number | undefined };
    try {
      result = await this.send(claimed, merchant?.webhookSecret ?? null);
    } catch (caught) {
      result = { error: (caught as Error).message, httpStatus: null };
    }
    const attempt: DeliveryAttemptDocument = {
      number: claimed.attemptCount, dtsAttempted: now, outcome: result.error === null ? 'delivered' : 'failed',
      httpStatus: result.httpStatus, error: result.error, durationMs: Math.round((performance.now() - started) * 10) / 10,
    };
    const inRound = claimed.attemptCount - (claimed.roundStart ?? 0);
    const delay = this.policy.scheduleMs[inRound];
    const nextDelay = delay === undefined ? undefined : Math.min(MAX_RETRY_AFTER_MS, Math.max(delay, result.retryAfterMs ?? 0));
    const update = result.error === null
      ? { status: 'delivered' as const, dtsDelivered: new Date(), lastError: null, dtsNextAttempt: null }
      : nextDelay === undefined
        ? { status: 'failed' as const, lastError: result.error, dtsNextAttempt: null }
        : { lastError: result.error, dtsNextAttempt: new Date(Date.now() + nextDelay) };
    // Written only while this attempt still holds the delivery (a sweep may have reclaimed it after the lease).
    const updated = await this.deliveries.findOneAndUpdate({ _id: id, attemptCount: claimed.attemptCount }, { $set: update, $push: { attempts: attempt } }, { returnDocument: 'after' });
    if (!updated) return null;
    // Failures count against the merchant's endpoint only while it is where the delivery goes.
    if (claimed.kind === 'webhook' && merchant?.webhookUrl === claimed.to) await this.countEndpoint(claimed.svcMerchantId, result.error === null);
    await recordEvent(
      this.db, 'webhook.attempt', { svcAggregatorId: claimed.svcAggregatorId, svcMerchantId: claimed.svcMerchantId },
      { deliveryId: id, number: attempt.number, outcome: attempt.outcome, httpStatus: attempt.httpStatus }, `${id}:attempt:${attempt.number}`,
    );
    this.logger[result.error ? 'warn' : 'info']('delivery attempted', { deliveryId: id, kind: claimed.kind, attempt: attempt.number, outcome: attempt.outcome, ...(result.error ? { error: result.error } : {}) });
    if (result.error !== null && nextDelay !== undefined) this.later(id, nextDelay);
    return updated;
  }

  /** Counts a webhook outcome on the merchant's endpoint; a run of failures disables it. */
  private async countEndpoint(svcMerchantId: string, delivered: boolean): Promise<void> {
    const merchants = merchantsCollection(this.db);
    if (delivered) {
      await merchants.updateOne({ _id: svcMerchantId }, { $set: { webhookFailures: 0 } });
      return;
    }
    const counted = await merchants.findOneAndUpdate({ _id: svcMerchantId }, { $inc: { webhookFailures: 1 } }, { returnDocument: 'after' });
    if (counted && (counted.webhookFailures ?? 0) >= this.policy.disableAfter && !counted.dtsWebhookDisabled) {
      await merchants.updateOne({ _id: svcMerchantId, dtsWebhookDisabled: null }, { $set: { dtsWebhookDisabled: new Date() } });
      this.logger.warn('merchant webhook endpoint disabled after failures', { svcMerchantId, failures: counted.webhookFailures });
    }
  }

  /** Sends one delivery: the error text (null when it arrived), the receiver's status and Retry-After. */
  private async send(delivery: DeliveryDocument, secret: string | null): Promise<{ error: string | null; httpStatus: number | null; retryAfterMs?: number | undefined }> {
    if (delivery.kind === 'email') {
      await this.notifier.email({ to: delivery.to, subject: String(delivery.payload.subject), text: String(delivery.payload.text) });
      return { error: null, httpStatus: null };
    }
    if (!secret) return { error: 'the merchant no longer exists', httpStatus: null };
    const outcome = await deliverWebhook({ url: delivery.to, secret }, delivery.payload, WEBHOOK_TIMEOUT_MS, { allowInternal: this.policy.allowInternal, id: delivery._id });
    if (outcome.kind === 'reply') {
      const ok = outcome.status >= 200 && outcome.status < 300;
      return { error: ok ? null : `the receiver answered ${outcome.status}`, httpStatus: outcome.status, retryAfterMs: outcome.retryAfterMs };
    }
    return { error: outcome.kind === 'timeout' ? 'the receiver did not answer in time' : outcome.message, httpStatus: null };
  }
}
