import type { Collection, Db } from 'mongodb';
import type { Filter } from 'mongodb';
import { appError, ErrorCode } from '../contracts/errors.js';
import type { Logger } from '../runtime/logger.js';
import { insertIfAbsent } from '../mongo/mongo.js';
import type { Notifier } from './notify.js';
import { recordEvent } from './outbox.js';
import { deliverWebhook } from './webhooks.js';
import { deliveryAttempts, reportQueueDepth, zeroDeliveryCounters } from '../telemetry/metrics.js';
import { inSpan, SpanKind, SpanStatusCode } from '../telemetry/tracing.js';

const WEBHOOK_TIMEOUT_MS = 5000;
/** A claimed delivery is retried after this long if its sender died mid-attempt. */
const LEASE_MS = 60_000;
/** Retries due within this long are also timed in-process, not only by the periodic sweep. */
const TIMED_RETRY_MS = 60_000;
/** The longest a receiver's Retry-After may push an attempt back. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** One attempt in a delivery's log. */
interface DeliveryAttemptDocument {
  number: number;
  dtsAttempted: Date;
  outcome: 'delivered' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** One message that must reach a webhook (a merchant's, an aggregator's) or an inbox, with its attempts. */
export interface DeliveryDocument {
  _id: string;
  kind: 'webhook' | 'email';
  /** The merchant whose endpoint and secret a webhook uses; null for an aggregator's own endpoint. */
  svcMerchantId: string | null;
  svcAggregatorId: string;
  /** What it reports: payment_link.sent, ach_payment.updated. */
  eventType: string;
  /** The webhook URL or the email address. */
  to: string;
  /** A payment link's delivery: sent only while that link is still Sent (not after a cancel or expiry). */
  whileLinkSent?: string;
  /** A webhook's JSON body; an email's subject and text. */
  payload: Record<string, unknown>;
  /** `paused`: the endpoint is disabled; enabling it resumes the delivery. */
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

/** A webhook endpoint as a delivery finds it when it is attempted. */
interface DeliveryEndpoint {
  secret: string;
  /** Where deliveries go now (failures count against the endpoint only while they went there). */
  url: string | null;
  disabled: boolean;
}

/** What a subgraph's deliveries go to: its endpoints, and whether a delivery is still wanted. */
export interface DeliveryEndpoints {
  /** The delivery's endpoint; null when it no longer exists. */
  endpointOf(delivery: DeliveryDocument): Promise<DeliveryEndpoint | null>;
  /** Why the delivery is no longer wanted (its payment link was cancelled, say), or null. */
  unwanted(delivery: DeliveryDocument): Promise<string | null>;
  /** Counts a webhook outcome on the endpoint; after `disableAfter` failures in a row, disables it. */
  count(delivery: DeliveryDocument, delivered: boolean, disableAfter: number): Promise<void>;
}

/** What an endpoint's owner document (a merchant, a card webhook configuration) keeps of its failures. */
export interface EndpointCounters {
  _id: string;
  /** Consecutive failed webhook attempts; reset by a delivered one. */
  webhookFailures?: number;
  /** Set when a run of failures disabled the endpoint. */
  dtsWebhookDisabled?: Date | null;
}

/**
 * Counts one webhook outcome on the document that owns an endpoint: a delivered attempt resets the
 * run; the `disableAfter`-th failure in a row disables the endpoint (once, by a conditional update).
 */
export async function countEndpointOutcome<T extends EndpointCounters>(
  owners: Collection<T>,
  id: string,
  delivered: boolean,
  disableAfter: number,
): Promise<void> {
  const owner = owners as unknown as Collection<EndpointCounters>;
  if (delivered) {
    // Written only when there is a run to reset: a delivered attempt is the common case.
    await owner.updateOne({ _id: id, webhookFailures: { $ne: 0 } }, { $set: { webhookFailures: 0 } });
    return;
  }
  const counted = await owner.findOneAndUpdate({ _id: id }, { $inc: { webhookFailures: 1 } }, { returnDocument: 'after' });
  if (counted && (counted.webhookFailures ?? 0) >= disableAfter && !counted.dtsWebhookDisabled) {
    await owner.updateOne({ _id: id, dtsWebhookDisabled: null }, { $set: { dtsWebhookDisabled: new Date() } });
  }
}

/** Re-enables an endpoint after a run of failures disabled it. */
export async function enableEndpoint<T extends EndpointCounters>(owners: Collection<T>, id: string): Promise<void> {
  await (owners as unknown as Collection<EndpointCounters>).updateOne(
    { _id: id },
    { $set: { dtsWebhookDisabled: null, webhookFailures: 0 } },
  );
}

/** The statuses a delivery list may be narrowed to; anything else is VALIDATION_FAILED naming `status`. */
export function checkDeliveryStatus(status: string | null | undefined): DeliveryDocument['status'] | null {
  if (!status) return null;
  if (!['pending', 'delivered', 'failed', 'paused'].includes(status))
    throw appError(ErrorCode.VALIDATION_FAILED, 'status must be pending, delivered, failed or paused.', { field: 'status' });
  return status as DeliveryDocument['status'];
}

export interface DeliveryPolicy {
  /** Delays before each attempt of a round (WEBHOOK_RETRY_SCHEDULE). */
  scheduleMs: readonly number[];
  /** Consecutive failed webhook attempts that disable an endpoint (WEBHOOK_DISABLE_AFTER). */
  disableAfter: number;
  allowInternal: boolean;
}

/**
 * Webhooks and emails (payment link sent, ACH payment updates, card authorization advices): stored
 * before they are attempted, then attempted on the configured schedule until delivered (any 2xx)
 * or given up, honouring a receiver's `Retry-After`. Every attempt is logged on the delivery and
 * is a `webhook.attempt` event. Its `webhook-id` is the delivery id, the same on every attempt,
 * so a receiver can drop repeats. An endpoint that fails `disableAfter` times in a row is
 * disabled: its deliveries pause until it is enabled again. Pending deliveries survive restarts:
 * the periodic sweep picks up whatever is due.
 */
export class Deliveries {
  private readonly deliveries: Collection<DeliveryDocument>;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly unreport: () => void;

  constructor(
    private readonly db: Db,
    private readonly notifier: Notifier | null,
    private readonly logger: Logger,
    private readonly policy: DeliveryPolicy,
    private readonly endpoints: DeliveryEndpoints,
  ) {
    this.deliveries = deliveriesCollection(db);
    zeroDeliveryCounters();
    this.unreport = reportQueueDepth(db.databaseName, 'deliveries', () => this.deliveries.countDocuments({ status: 'pending' }));
  }

  /**
   * Stores a delivery (once per id) and makes its first attempt after the schedule's first delay;
   * with `wait: false` it returns once stored, the attempt going on in the background.
   */
  async enqueue(
    delivery: Pick<
      DeliveryDocument,
      '_id' | 'kind' | 'svcMerchantId' | 'svcAggregatorId' | 'eventType' | 'to' | 'payload' | 'whileLinkSent'
    >,
    options: { wait: boolean } = { wait: true },
  ): Promise<DeliveryDocument | null> {
    const now = new Date();
    const first = this.policy.scheduleMs[0] ?? 0;
    await insertIfAbsent(this.deliveries, {
      ...delivery,
      status: 'pending',
      attemptCount: 0,
      roundStart: 0,
      attempts: [],
      lastError: null,
      dtsCreated: now,
      dtsDelivered: null,
      dtsNextAttempt: new Date(now.getTime() + first),
    });
    if (first > 0) return this.later(delivery._id, first);
    if (!options.wait) {
      void this.attempt(delivery._id).catch((error: unknown) =>
        this.logger.warn('delivery attempt failed to run', { deliveryId: delivery._id, error: (error as Error).message }),
      );
      return null;
    }
    return this.attempt(delivery._id);
  }

  /** The index of the retry sweep: pending deliveries by when they are due. */
  static async createIndexes(db: Db): Promise<void> {
    await deliveriesCollection(db).createIndex({ status: 1, dtsNextAttempt: 1 });
  }

  /** Attempts every due delivery (the recurring task). */
  async retryDue(): Promise<void> {
    const due = await this.deliveries
      .find({ status: 'pending', dtsNextAttempt: { $lte: new Date() } }, { projection: { _id: 1 } })
      .limit(50)
      .toArray();
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
    if (!reset)
      throw appError(ErrorCode.CONFLICT, `Delivery ${id} is ${current.status}; only a failed delivery is sent again.`, {
        field: 'deliveryId',
      });
    return (await this.attempt(id)) ?? reset;
  }

  /** Resumes the paused deliveries of an endpoint the subgraph has just enabled again. */
  async resume(which: Filter<DeliveryDocument>): Promise<void> {
    const paused = await this.deliveries.find({ ...which, status: 'paused' }, { projection: { _id: 1 } }).toArray();
    await this.deliveries.updateMany({ ...which, status: 'paused' }, { $set: { status: 'pending', dtsNextAttempt: new Date() } });
    // Resumed in the background, in order: the mutation answers at once.
    void (async () => {
      for (const { _id } of paused) await this.attempt(_id);
    })().catch((error: unknown) => this.logger.warn('resuming deliveries failed', { error: (error as Error).message }));
  }

  /** Stops the in-process retry timers (the periodic sweep takes over after a restart). */
  close(): void {
    this.unreport();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private later(id: string, delayMs: number): null {
    if (delayMs <= TIMED_RETRY_MS) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.attempt(id).catch((error: unknown) =>
          this.logger.warn('delivery attempt failed to run', { deliveryId: id, error: (error as Error).message }),
        );
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
    const endpoint = claimed.kind === 'webhook' ? await this.endpoints.endpointOf(claimed) : null;
    if (endpoint?.disabled) {
      await this.deliveries.updateOne({ _id: id }, { $set: { status: 'paused', dtsNextAttempt: null }, $inc: { attemptCount: -1 } });
      return null;
    }
    const unwanted = await this.endpoints.unwanted(claimed);
    if (unwanted) {
      await this.deliveries.updateOne(
        { _id: id },
        { $set: { status: 'failed', lastError: `not sent: ${unwanted}`, dtsNextAttempt: null }, $inc: { attemptCount: -1 } },
      );
      return null;
    }
    const started = performance.now();
    const result: { error: string | null; httpStatus: number | null; retryAfterMs?: number | undefined } = await inSpan(
      `deliver ${claimed.kind}`,
      SpanKind.CLIENT,
      { 'delivery.id': id, 'delivery.kind': claimed.kind, 'delivery.attempt': claimed.attemptCount },
      async (span) => {
        const sent = await this.send(claimed, endpoint?.secret ?? null).catch((caught: unknown) => ({
          error: (caught as Error).message,
          httpStatus: null,
        }));
        if (sent.httpStatus !== null) span.setAttribute('http.response.status_code', sent.httpStatus);
        if (sent.error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: sent.error });
        return sent;
      },
    );
    deliveryAttempts.inc({ kind: claimed.kind, outcome: result.error === null ? 'delivered' : 'failed' });
    const attempt: DeliveryAttemptDocument = {
      number: claimed.attemptCount,
      dtsAttempted: now,
      outcome: result.error === null ? 'delivered' : 'failed',
      httpStatus: result.httpStatus,
      error: result.error,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
    };
    const inRound = claimed.attemptCount - claimed.roundStart;
    const delay = this.policy.scheduleMs[inRound];
    const nextDelay = delay === undefined ? undefined : Math.min(MAX_RETRY_AFTER_MS, Math.max(delay, result.retryAfterMs ?? 0));
    const update =
      result.error === null
        ? { status: 'delivered' as const, dtsDelivered: new Date(), lastError: null, dtsNextAttempt: null }
        : nextDelay === undefined
          ? { status: 'failed' as const, lastError: result.error, dtsNextAttempt: null }
          : { lastError: result.error, dtsNextAttempt: new Date(Date.now() + nextDelay) };
    // Written only while this attempt still holds the delivery (a sweep may have reclaimed it after the lease).
    const updated = await this.deliveries.findOneAndUpdate(
      { _id: id, attemptCount: claimed.attemptCount },
      { $set: update, $push: { attempts: attempt } },
      { returnDocument: 'after' },
    );
    if (!updated) return null;
    // Failures count against the endpoint only while it is where the delivery goes.
    if (claimed.kind === 'webhook' && endpoint?.url === claimed.to)
      await this.endpoints.count(claimed, result.error === null, this.policy.disableAfter);
    await recordEvent(
      this.db,
      'webhook.attempt',
      { svcAggregatorId: claimed.svcAggregatorId, ...(claimed.svcMerchantId ? { svcMerchantId: claimed.svcMerchantId } : {}) },
      { deliveryId: id, number: attempt.number, outcome: attempt.outcome, httpStatus: attempt.httpStatus },
      `${id}:attempt:${attempt.number}`,
    );
    this.logger[result.error ? 'warn' : 'info']('delivery attempted', {
      deliveryId: id,
      kind: claimed.kind,
      attempt: attempt.number,
      outcome: attempt.outcome,
      ...(result.error ? { error: result.error } : {}),
    });
    if (result.error !== null && nextDelay !== undefined) this.later(id, nextDelay);
    return updated;
  }

  /** Sends one delivery: the error text (null when it arrived), the receiver's status and Retry-After. */
  private async send(
    delivery: DeliveryDocument,
    secret: string | null,
  ): Promise<{ error: string | null; httpStatus: number | null; retryAfterMs?: number | undefined }> {
    if (delivery.kind === 'email') {
      if (!this.notifier) return { error: 'no email sender here', httpStatus: null };
      await this.notifier.email({ to: delivery.to, subject: String(delivery.payload.subject), text: String(delivery.payload.text) });
      return { error: null, httpStatus: null };
    }
    if (!secret) return { error: 'the endpoint no longer exists', httpStatus: null };
    const outcome = await deliverWebhook({ url: delivery.to, secret }, delivery.payload, WEBHOOK_TIMEOUT_MS, {
      allowInternal: this.policy.allowInternal,
      id: delivery._id,
    });
    if (outcome.kind === 'reply') {
      const ok = outcome.status >= 200 && outcome.status < 300;
      return {
        error: ok ? null : `the receiver answered ${outcome.status}`,
        httpStatus: outcome.status,
        retryAfterMs: outcome.retryAfterMs,
      };
    }
    return { error: outcome.kind === 'timeout' ? 'the receiver did not answer in time' : outcome.message, httpStatus: null };
  }
}
