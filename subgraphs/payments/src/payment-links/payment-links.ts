import { randomBytes } from 'node:crypto';
import { PAYMENTS_LIST_CAPS } from '../list-caps.js';
import type { Db, Filter } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { signJwt, PAYMENT_JWT_LIFETIME_SECONDS } from '../../../../platform/security/jwt.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { recordEvent } from '../../../../platform/messaging/outbox.js';
import { checkPage, readPage } from '../../../../platform/graphql/paging.js';
import { isIsoDate } from '../../../../platform/contracts/dates.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, EMAIL_RULE, ID_RULE, required } from '../../../../platform/security/validate.js';
import { checkAmount, fromMinor, isCurrencyCode, toJsonNumber, ZERO } from '../../../../platform/money/money.js';
import type { Deliveries } from '../merchants/deliveries.js';
import { merchantsCollection, type MerchantDocument } from '../merchants/datasource.js';
import {
  PAYMENT_LINK_STATUSES,
  paymentLinksCollection,
  type PaymentLinkDocument,
  type PaymentLinkField,
  type PaymentLinkStatus,
  type StatusChangeDocument,
} from './datasource.js';
import { paymentPageHtml } from './payment-page.js';

/** Statuses a merchant may cancel from (the aggregator spec). */
const CANCELLABLE: readonly PaymentLinkStatus[] = ['Initiated', 'Sent', 'Processing'];
export const FIELD_CODES = ['firstName', 'lastName', 'email', 'phone'] as const;

type Initiator = { initiatorId: string; initiatorType: StatusChangeDocument['initiatorType'] };

function historyEntry(status: PaymentLinkStatus, initiator: Initiator, now: Date): StatusChangeDocument {
  return { _id: newId('sch_'), ...initiator, status, dtsCreatedAt: now, dtsUpdatedAt: now };
}

/** The link details a merchant's webhook receives, and the merchant view of a link. */
function linkView(link: PaymentLinkDocument) {
  const { _id, refunded, needsDelivery, ...view } = link;
  // Webhook payloads carry amounts as the JSON numbers the spec shows.
  return { ...view, amount: toJsonNumber(link.amount, link.currency) };
}

export interface PaymentLinkOptions {
  jwtSecret: string;
  paymentPageUrl: string;
  lifetimeSeconds: number;
}

/**
 * Payment links. Every status change is one conditional update on the link (its current status
 * in the filter, the new status and a history entry in the update), so of two racing requests
 * exactly one changes it; each change is then an event in the outbox.
 */
export class PaymentLinks {
  private readonly links;

  constructor(
    private readonly db: Db,
    private readonly deliveries: Deliveries,
    private readonly options: PaymentLinkOptions,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {
    this.links = paymentLinksCollection(db);
  }

  async create(merchant: { svcMerchantId: string; svcAggregatorId: string }, input: Record<string, unknown>): Promise<PaymentLinkDocument> {
    const svcMerchantRef =
      checkString(input.svcMerchantRef, 'svcMerchantRef', {
        min: 1,
        max: 32,
        pattern: /^[A-Za-z0-9]+$/,
        patternText: 'letters and digits',
      }) ?? null;
    const payerName = checkString(input.payerName, 'payerName', { min: 1, max: 100, safeText: true }) ?? null;
    const invoiceNumber =
      checkString(input.invoiceNumber, 'invoiceNumber', { max: 50, pattern: /^[^<>]*$/, patternText: 'text without < or >' }) ?? null;
    const currency = checkString(required(input.currency, 'currency'), 'currency', {
      pattern: /^[A-Z]{3}$/,
      patternText: 'a 3-letter ISO 4217 code',
    })!;
    if (!isCurrencyCode(currency))
      throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 currency code in use.', { field: 'currency' });
    const amount = checkAmount(required(input.amount, 'amount'), currency, 'amount', { max: '1000000' });
    const dueDate = checkString(input.dueDate, 'dueDate') ?? null;
    if (dueDate !== null && (!isIsoDate(dueDate) || dueDate < new Date().toISOString().slice(0, 10)))
      throw appError(ErrorCode.VALIDATION_FAILED, 'dueDate must be a date written YYYY-MM-DD, not in the past.', { field: 'dueDate' });
    const description = checkString(input.description, 'description', { max: 500 }) ?? null;
    const fields = ((input.fields as Array<Record<string, unknown>> | null | undefined) ?? []).map((field, i): PaymentLinkField => {
      const at = `fields[${i}]`;
      const code = checkString(required(field.code, `${at}.code`), `${at}.code`)!;
      if (!(FIELD_CODES as readonly string[]).includes(code))
        throw appError(ErrorCode.VALIDATION_FAILED, `${at}.code must be one of ${FIELD_CODES.join(', ')}.`, { field: `${at}.code` });
      const value = checkString(
        required(field.value, `${at}.value`),
        `${at}.value`,
        code === 'email' ? EMAIL_RULE : { max: 100, safeText: true },
      )!;
      return {
        index: typeof field.index === 'number' ? field.index : i,
        code,
        label: checkString(field.label, `${at}.label`, { max: 100 }) ?? code,
        value,
      };
    });
    if (fields.length > PAYMENTS_LIST_CAPS['PaymentLinkInput.fields'])
      throw appError(ErrorCode.VALIDATION_FAILED, `fields may hold at most ${PAYMENTS_LIST_CAPS['PaymentLinkInput.fields']} items.`, {
        field: 'fields',
      });
    const types = (input.availablePaymentType as string[] | null | undefined) ?? ['card', 'ach'];
    if (types.length === 0 || types.some((type) => type !== 'card' && type !== 'ach'))
      throw appError(ErrorCode.VALIDATION_FAILED, 'availablePaymentType must hold card and/or ach.', { field: 'availablePaymentType' });
    const now = new Date();
    const id = newId('pl_');
    const link: PaymentLinkDocument = {
      _id: id,
      svcTransactionId: id,
      svcAggregatorId: merchant.svcAggregatorId,
      svcMerchantId: merchant.svcMerchantId,
      svcMerchantRef,
      payerName,
      invoiceNumber,
      amount,
      currency,
      dueDate,
      dtsExpiredAt: null,
      description,
      status: 'Initiated',
      fields,
      availablePaymentType: [...new Set(types)] as PaymentLinkDocument['availablePaymentType'],
      statusChangeHistory: [historyEntry('Initiated', { initiatorId: merchant.svcMerchantId, initiatorType: 'merchant' }, now)],
      dtsCreatedAt: now,
      dtsUpdatedAt: now,
      link: null,
      url: null,
      refunded: ZERO,
      needsDelivery: false,
    };
    await this.links.insertOne(link);
    await this.event(link, null);
    return link;
  }

  /** The merchant's own link; another merchant's answers as if it did not exist. */
  private async ofMerchant(svcMerchantId: string, svcTransactionId: string | null | undefined): Promise<PaymentLinkDocument> {
    const id = checkString(required(svcTransactionId, 'svcTransactionId'), 'svcTransactionId', ID_RULE)!;
    const link = await this.links.findOne({ _id: id });
    if (!link || link.svcMerchantId !== svcMerchantId)
      throw appError(ErrorCode.NOT_FOUND, `Payment link ${id} does not exist.`, { field: 'svcTransactionId' });
    return (await this.expireIfDue(id)) ?? link;
  }

  /**
   * Moves a link from one of `from` to `to` in one conditional update; CONFLICT when its status
   * does not allow it. A request acts on the link as it was when the request arrived: if another
   * request changed it meanwhile (a racing send and cancel), this one is refused rather than
   * applied on top, so of racing requests exactly one changes the link.
   */
  private async transition(
    link: PaymentLinkDocument,
    arrived: Date,
    from: readonly PaymentLinkStatus[],
    to: PaymentLinkStatus,
    initiator: Initiator,
    set: Partial<PaymentLinkDocument> = {},
  ) {
    const refuse = (status: string) =>
      appError(ErrorCode.CONFLICT, `The payment link is ${status}; it can become ${to} only from ${from.join(', ')}.`, {
        field: 'svcTransactionId',
      });
    if (!from.includes(link.status)) throw refuse(link.status);
    const now = new Date(Math.max(Date.now(), link.dtsUpdatedAt.getTime() + 1));
    const updated = await this.links.findOneAndUpdate(
      { _id: link._id, status: { $in: [...from] }, dtsUpdatedAt: { $lte: arrived } },
      { $set: { ...set, status: to, dtsUpdatedAt: now }, $push: { statusChangeHistory: historyEntry(to, initiator, now) } },
      { returnDocument: 'after' },
    );
    if (!updated) {
      const current = await this.links.findOne({ _id: link._id }, { projection: { status: 1 } });
      throw appError(
        ErrorCode.CONFLICT,
        `The payment link changed while this request was handled and is now ${current?.status ?? 'gone'}; ${to} was not applied.`,
        { field: 'svcTransactionId' },
      );
    }
    await this.event(updated, link.status);
    return updated;
  }

  async cancel(merchant: { svcMerchantId: string }, svcTransactionId: string | null | undefined) {
    const arrived = new Date();
    const link = await this.ofMerchant(merchant.svcMerchantId, svcTransactionId);
    return this.transition(link, arrived, CANCELLABLE, 'Cancelled', { initiatorId: merchant.svcMerchantId, initiatorType: 'merchant' });
  }

  /**
   * Sends an Initiated link: it becomes Sent with its link code, url and dtsExpiredAt; then the
   * customer is emailed, or the merchant's webhook gets the details and the payment page, as the
   * merchant chose. Delivery is stored and retried: its failure does not undo the send.
   */
  async send(merchant: { svcMerchantId: string; svcAggregatorId: string }, svcTransactionId: string | null | undefined) {
    const arrived = new Date();
    const link = await this.ofMerchant(merchant.svcMerchantId, svcTransactionId);
    const settings = await merchantsCollection(this.db).findOne({ _id: merchant.svcMerchantId });
    if (!settings) throw appError(ErrorCode.NOT_FOUND, `Merchant ${merchant.svcMerchantId} does not exist.`, { field: 'svcMerchantId' });
    const email = link.fields.find((field) => field.code === 'email')?.value;
    if (settings.linkDelivery === 'email' && !email && link.status === 'Initiated') {
      throw appError(
        ErrorCode.VALIDATION_FAILED,
        'The link has no email field to send it to; add one, or choose webhook delivery for the merchant.',
        { field: 'fields' },
      );
    }
    const code = randomBytes(24).toString('base64url');
    const url = `${this.options.paymentPageUrl}?link=${encodeURIComponent(code)}`;
    const dtsExpiredAt = new Date(Date.now() + this.options.lifetimeSeconds * 1000);
    const sent = await this.transition(
      link,
      arrived,
      ['Initiated'],
      'Sent',
      { initiatorId: merchant.svcMerchantId, initiatorType: 'merchant' },
      { link: code, url, dtsExpiredAt, needsDelivery: true },
    );
    await this.deliver(sent, settings);
    return sent;
  }

  /**
   * Stores the sent link's email or webhook for delivery (and attempts it), then clears the
   * link's `needsDelivery`. The flag is set in the same update as Sent, so a crash between the
   * two leaves it set, and `repairDeliveries` stores the delivery later.
   */
  private async deliver(link: PaymentLinkDocument, merchant: MerchantDocument) {
    const email = link.fields.find((field) => field.code === 'email')?.value;
    const html = paymentPageHtml(link, merchant);
    if (merchant.linkDelivery === 'webhook' && merchant.webhookUrl) {
      await this.deliveries.enqueue({
        _id: `dlv_${link._id}_sent`,
        kind: 'webhook',
        svcMerchantId: merchant._id,
        svcAggregatorId: link.svcAggregatorId,
        eventType: 'payment_link.sent',
        to: merchant.webhookUrl,
        whileLinkSent: link._id,
        payload: {
          type: 'payment_link.sent',
          timestamp: new Date().toISOString(),
          data: { paymentLink: linkView(link), paymentPageHtml: html },
        },
      });
    } else if (email) {
      const amount = `${fromMinor(link.amount, link.currency)} ${link.currency}`;
      await this.deliveries.enqueue({
        _id: `dlv_${link._id}_sent`,
        kind: 'email',
        svcMerchantId: merchant._id,
        svcAggregatorId: link.svcAggregatorId,
        eventType: 'payment_link.sent',
        to: email,
        whileLinkSent: link._id,
        payload: {
          subject: `${merchant.name} asks you to pay ${amount}`,
          text: [
            `${merchant.name} sent you a payment request of ${amount}${link.invoiceNumber ? ` for invoice ${link.invoiceNumber}` : ''}.`,
            link.description ?? '',
            `Pay here: ${link.url}`,
            `The link expires at ${link.dtsExpiredAt!.toISOString()}.`,
          ]
            .filter(Boolean)
            .join('\n\n'),
        },
      });
    }
    await this.links.updateOne({ _id: link._id }, { $set: { needsDelivery: false } });
  }

  /** Stores the deliveries a crash left unstored: Sent links still flagged a minute after their change (the recurring task). */
  async repairDeliveries(): Promise<void> {
    const stale = await this.links
      .find({ needsDelivery: true, status: 'Sent', dtsUpdatedAt: { $lte: new Date(Date.now() - 60_000) } })
      .limit(50)
      .toArray();
    for (const link of stale) {
      const merchant = await merchantsCollection(this.db).findOne({ _id: link.svcMerchantId });
      if (merchant) await this.deliver(link, merchant);
    }
  }

  /** A customer JWT for a Sent link, by its code. Unknown codes: NOT_FOUND; links no longer Sent: CONFLICT. */
  async customerToken(code: string | null | undefined) {
    const link = checkString(required(code, 'link'), 'link', { max: 200 })!;
    // The whole link URL is accepted as well as the code in it.
    let bare = link;
    if (link.includes('link=')) {
      try {
        bare = new URL(link, 'http://x').searchParams.get('link') ?? link;
      } catch {
        throw appError(ErrorCode.VALIDATION_FAILED, 'link must be the code of a payment link, or its URL.', { field: 'link' });
      }
    }
    const found = await this.links.findOne({ link: bare });
    if (!found) throw appError(ErrorCode.NOT_FOUND, 'No payment link has this link.', { field: 'link' });
    const current = (await this.expireIfDue(found._id)) ?? found;
    if (current.status !== 'Sent') throw appError(ErrorCode.CONFLICT, `The payment link is ${current.status}.`, { field: 'link' });
    const token = await signJwt(
      { typ: 'customer', sub: current._id, agg: current.svcAggregatorId, mer: current.svcMerchantId },
      this.options.jwtSecret,
    );
    await this.audit.record(
      'TOKEN_ISSUED',
      { type: 'paymentLink', id: current._id },
      { kind: 'customer', owner: current._id, svcMerchantId: current.svcMerchantId, expiresIn: PAYMENT_JWT_LIFETIME_SECONDS },
    );
    return { expiresIn: PAYMENT_JWT_LIFETIME_SECONDS, token };
  }

  /** The payment page of a Sent link by its code; NOT_FOUND for unknown codes and links no longer Sent. */
  async page(code: string): Promise<string> {
    const found = await this.links.findOne({ link: checkString(code, 'link', { min: 1, max: 200 })! });
    const link = found && ((await this.expireIfDue(found._id)) ?? found);
    const merchant = link?.status === 'Sent' ? await merchantsCollection(this.db).findOne({ _id: link.svcMerchantId }) : null;
    if (!link || !merchant) throw appError(ErrorCode.NOT_FOUND, 'No payment link is open at this address.', { field: 'link' });
    return paymentPageHtml(link, merchant);
  }

  /** Expires one link when it is Sent past its dtsExpiredAt; the expired link, or null when nothing changed. */
  async expireIfDue(id: string): Promise<PaymentLinkDocument | null> {
    const now = new Date();
    const expired = await this.links.findOneAndUpdate(
      { _id: id, status: 'Sent', dtsExpiredAt: { $lte: now } },
      {
        $set: { status: 'Expired', dtsUpdatedAt: now },
        $push: { statusChangeHistory: historyEntry('Expired', { initiatorId: 'system', initiatorType: 'system' }, now) },
      },
      { returnDocument: 'after' },
    );
    // The expiry is the system's, whichever request happened to find it due.
    if (expired) await this.event(expired, 'Sent', this.audit.asSystem());
    return expired;
  }

  /** Expires every Sent link past its dtsExpiredAt (the recurring task). */
  async expireDue(): Promise<number> {
    const due = await this.links
      .find({ status: 'Sent', dtsExpiredAt: { $lte: new Date() } }, { projection: { _id: 1 } })
      .limit(100)
      .toArray();
    let count = 0;
    for (const { _id } of due) if (await this.expireIfDue(_id)) count += 1;
    return count;
  }

  /** The merchant's links, newest first, in the aggregator spec's paging. */
  async list(svcMerchantId: string, input: { status?: string | null; numberOfRecords?: number | null; skipRecords?: number | null }) {
    const filter: Filter<PaymentLinkDocument> = { svcMerchantId };
    if (input.status) {
      if (!(PAYMENT_LINK_STATUSES as readonly string[]).includes(input.status))
        throw appError(ErrorCode.VALIDATION_FAILED, `status must be one of ${PAYMENT_LINK_STATUSES.join(', ')}.`, { field: 'status' });
      filter.status = input.status as PaymentLinkStatus;
    }
    return readPage(this.links.find(filter).sort({ dtsCreatedAt: -1, _id: -1 }), checkPage(input));
  }

  /** Links counted by status, every status once: an aggregator's merchants', or one merchant's. */
  async statusCounts(owner: { svcAggregatorId: string } | { svcMerchantId: string }) {
    const asOf = new Date();
    const groups = await this.links
      .aggregate<{ _id: PaymentLinkStatus; count: number }>([{ $match: owner }, { $group: { _id: '$status', count: { $sum: 1 } } }])
      .toArray();
    const counted = new Map(groups.map((group) => [group._id, group.count]));
    const statuses = PAYMENT_LINK_STATUSES.map((status) => ({ status, count: counted.get(status) ?? 0 }));
    return { asOf, total: statuses.reduce((sum, { count }) => sum + count, 0), statuses };
  }

  /** Each status change (creation included) is an event and an audit record. */
  private async event(link: PaymentLinkDocument, previousStatus: PaymentLinkStatus | null, audit: AuditTrail = this.audit) {
    await recordEvent(
      this.db,
      'payment_link.status',
      { svcAggregatorId: link.svcAggregatorId, svcMerchantId: link.svcMerchantId },
      { svcTransactionId: link._id, svcMerchantId: link.svcMerchantId, status: link.status, previousStatus },
      `${link._id}:${link.status}`,
    );
    const initiator = link.statusChangeHistory.at(-1);
    await audit.record(
      'PAYMENT_LINK_STATUS_CHANGED',
      { type: 'paymentLink', id: link._id },
      {
        from: previousStatus,
        to: link.status,
        svcMerchantId: link.svcMerchantId,
        initiatorType: initiator?.initiatorType ?? null,
      },
    );
  }
}
