import { MongoServerError, type Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/graphql/errors.js';
import type { GraphClient } from '../../../../platform/graphql/graph-client.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { recordEvent } from '../../../../platform/messaging/outbox.js';
import { isOwnKey } from '../../../../platform/security/own.js';
import { checkString } from '../../../../platform/security/validate.js';
import { fromMinor, isCurrencyCode, minor, toJsonNumber, toMinor, ZERO, type MinorUnits } from '../../../../platform/money/money.js';
import type { Deliveries } from '../../../../platform/messaging/deliveries.js';
import { deliverWebhook, type WebhookOutcome } from '../../../../platform/messaging/webhooks.js';
import { cardMessagesCollection, type CardMessageDocument } from './datasource.js';
import { cardsCollection, type CardDocument } from '../cards/datasource.js';
import { webhookConfigsCollection, type WebhookConfigDocument } from '../webhooks/datasource.js';

export const MESSAGE_TYPES = { '0100': 'authorization request', '0200': 'financial request', '0220': 'advice', '0420': 'reversal advice' } as const;
export type MessageType = keyof typeof MESSAGE_TYPES;

/** A card message as the engine takes it. */
export interface CardMessage {
  messageType: string;
  actionType?: string | null;
  svcCardId: string;
  /** Decimal text, in `currency`. */
  amount: string;
  currency: string;
  merchantName?: string | null;
  mcc?: string | null;
  stan: string;
  rrn: string;
  originalStan?: string | null;
}

const EVALUATE = `query ($input: TransactionProposalInput!) { evaluateTransaction(input: $input) { allowed rule reason } }`;
const RECORD = `mutation ($input: CardTransactionInput!) { recordCardTransaction(input: $input) { transactionId } }`;

/** A checked message: its types, and its amount in minor units. */
export interface CheckedMessage {
  messageType: MessageType;
  actionType: 'request' | 'advice';
  amount: MinorUnits;
}

/** Checks a message's fields; returns its message type, action type and amount. */
export function checkMessage(message: CardMessage): CheckedMessage {
  const messageType = message.messageType;
  if (!isOwnKey(MESSAGE_TYPES, messageType)) throw appError(ErrorCode.VALIDATION_FAILED, `messageType must be one of ${Object.keys(MESSAGE_TYPES).join(', ')}.`, { field: 'messageType' });
  const actionType = message.actionType ?? (messageType === '0100' || messageType === '0200' ? 'request' : 'advice');
  if (actionType !== 'request' && actionType !== 'advice') throw appError(ErrorCode.VALIDATION_FAILED, 'actionType must be request or advice.', { field: 'actionType' });
  if (!isCurrencyCode(message.currency)) throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 currency code.', { field: 'currency' });
  const amount = toMinor(message.amount, message.currency, 'amount');
  if (!(amount > 0)) throw appError(ErrorCode.VALIDATION_FAILED, 'amount must be positive.', { field: 'amount' });
  checkString(message.stan, 'stan', { pattern: /^\d{6}$/, patternText: 'six digits' });
  checkString(message.rrn, 'rrn', { pattern: /^[A-Za-z0-9]{12}$/, patternText: '12 letters or digits' });
  checkString(message.mcc, 'mcc', { pattern: /^\d{4}$/, patternText: 'four digits' });
  checkString(message.merchantName, 'merchantName', { max: 100 });
  if (messageType === '0420') checkString(message.originalStan ?? '', 'originalStan', { pattern: /^\d{6}$/, patternText: 'the six-digit stan of the reversed message' });
  return { messageType, actionType, amount };
}

/** The card-authorization webhook's payload (designed: the spec does not show one). */
export function webhookPayload(messageId: string, message: CardMessage, types: CheckedMessage, card: Pick<CardDocument, 'SvcCardId' | 'lastFour'>, extra: Record<string, unknown> = {}) {
  return {
    type: 'card.authorization',
    messageId,
    messageType: types.messageType,
    messageName: MESSAGE_TYPES[types.messageType],
    actionType: types.actionType,
    card: { svcCardId: card.SvcCardId, lastFour: card.lastFour },
    amount: toJsonNumber(types.amount, message.currency),
    currency: message.currency,
    merchantName: message.merchantName ?? null,
    mcc: message.mcc ?? null,
    stan: message.stan,
    rrn: message.rrn,
    originalStan: message.originalStan ?? null,
    dtsTransmission: new Date().toISOString(),
    ...extra,
  };
}

/** The responseCode of an aggregator's reply, or null when it is missing or malformed. */
export function replyCode(outcome: WebhookOutcome): string | null {
  if (outcome.kind !== 'reply' || outcome.status < 200 || outcome.status >= 300) return null;
  const code = (outcome.body as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'string' && /^[0-9A-Z]{2}$/.test(code) ? code : null;
}

/** The authorization engine for ISO 8583-style card messages. */
export class CardAuthorizer {
  constructor(
    private readonly db: Db,
    private readonly graph: GraphClient,
    private readonly logger: Logger,
    /** Whether webhooks may target internal addresses (WEBHOOK_ALLOW_INTERNAL). */
    private readonly allowInternalWebhooks: boolean,
    /** Where advices go: stored, retried on the schedule, logged. */
    private readonly deliveries: Deliveries,
  ) {}

  async decide(message: CardMessage) {
    const started = performance.now();
    const types = checkMessage(message);
    const messageId = `msg_${types.messageType}_${message.svcCardId}_${message.stan}_${message.rrn}`;
    const messages = cardMessagesCollection(this.db);
    // The card is read while the message is claimed (a read decides nothing; a copy that loses the claim ignores it).
    const cardRead = cardsCollection(this.db).findOne({ _id: message.svcCardId });
    cardRead.catch(() => {});
    // A network retransmits: the same message gets the same answer. The message is claimed before
    // anything is decided, so of two copies arriving together one decides and the other waits.
    const claim = await this.claim(messageId, message, types.amount);
    if (claim) return claim;
    try {
      return await this.decideClaimed(messageId, message, types, started, cardRead);
    } catch (error) {
      // Free the claim, so that the network's retransmission is decided afresh.
      await messages.deleteOne({ _id: messageId, state: 'pending' });
      throw error;
    }
  }

  private async decideClaimed(messageId: string, message: CardMessage, types: ReturnType<typeof checkMessage>, started: number, cardRead: Promise<CardDocument | null>) {
    let waitedMs = 0;
    const messages = cardMessagesCollection(this.db);

    const card = await cardRead;
    let responseCode = '00';
    let decidedBy: CardMessageDocument['decidedBy'] = 'card';
    let reason = types.actionType === 'advice' ? 'Advice acknowledged.' : 'Approved.';
    let config: WebhookConfigDocument | null = null;
    if (!card) {
      [responseCode, reason] = ['14', 'Unknown card.'];
    } else if (card.status !== 'active' || !card.isActive || card.isClosed) {
      [responseCode, reason] = ['62', 'The card is off (blocked): no transaction is authorized.'];
    } else {
      // The aggregator's webhook configuration is read while the restrictions are evaluated.
      const configRead = card.svcAggregatorId ? webhookConfigsCollection(this.db).findOne({ _id: card.svcAggregatorId }) : Promise.resolve(null);
      configRead.catch(() => {});
      if (card.currency && message.currency !== card.currency) {
        [responseCode, decidedBy, reason] = ['57', 'card', `The card is in ${card.currency}; currency conversion is not supported.`];
      } else if (types.messageType !== '0420') {
        try {
          const { evaluateTransaction: decision } = await this.graph.request<{ evaluateTransaction: { allowed: boolean; rule: string | null; reason: string } }>(EVALUATE, {
            input: { SvcUserId: card.SvcUserId, txnType: message.currency === 'USD' ? 'USA' : 'international', amount: fromMinor(types.amount, message.currency), currency: message.currency, sourceAccountType: 'checking' },
          });
          if (!decision.allowed) [responseCode, decidedBy, reason] = ['57', 'restriction', decision.reason];
        } catch (error) {
          this.logger.error('restriction evaluation failed', { error: (error as Error).message, cause: ((error as Error).cause as Error | undefined)?.message });
          [responseCode, decidedBy, reason] = ['91', 'restriction', 'The restrictions could not be evaluated.'];
        }
      }
      config = await configRead;
      if (responseCode === '00' && types.actionType === 'request') {
        if (!config) {
          [responseCode, decidedBy, reason] = ['05', 'defaultStrategy', 'No webhook is arranged for the card program.'];
        } else {
          const outcome = await deliverWebhook(config, webhookPayload(messageId, message, types, card), config.timeoutMs, { allowInternal: this.allowInternalWebhooks });
          waitedMs = outcome.ms;
          const code = replyCode(outcome);
          if (code) {
            [responseCode, decidedBy, reason] = [code, 'aggregator', code === '00' ? 'Approved by the aggregator.' : `Declined by the aggregator (${code}).`];
          } else {
            const why = outcome.kind === 'timeout' ? 'no reply in time' : outcome.kind === 'unreachable' ? 'webhook unreachable' : 'malformed reply';
            responseCode = config.defaultStrategy === 'approve' ? '00' : '05';
            [decidedBy, reason] = ['defaultStrategy', `Default strategy ${config.defaultStrategy} (${why}).`];
          }
        }
      }
    }

    let transactionId: string | null = null;
    let amount = types.amount;
    if (card && responseCode === '00' && types.messageType === '0420') {
      // A reversal credits back at most what an approved purchase of this card debited, once.
      const original = await messages.findOne({ SvcCardId: card.SvcCardId, stan: message.originalStan!, messageType: { $in: ['0200', '0220'] }, responseCode: '00', state: 'decided' });
      const claimed = original?.transactionId
        ? await messages.findOneAndUpdate({ _id: original._id, reversedBy: null }, { $set: { reversedBy: messageId } })
        : null;
      if (!claimed) {
        amount = ZERO;
        reason = original ? 'Advice acknowledged; the original is already reversed.' : 'Advice acknowledged; no approved original to reverse.';
      } else {
        amount = minor(Math.min(types.amount, claimed.amount));
      }
    }
    const financial = types.messageType === '0200' || types.messageType === '0220' || types.messageType === '0420';
    if (card && responseCode === '00' && financial && amount > 0) {
      const recorded = await this.graph.request<{ recordCardTransaction: { transactionId: string } }>(RECORD, {
        input: {
          messageId, SvcAccountId: card.SvcAccountId, SvcUserId: card.SvcUserId, SvcCardId: card.SvcCardId,
          direction: types.messageType === '0420' ? 'credit' : 'debit', amount: fromMinor(amount, message.currency), currency: message.currency,
          narrative: message.merchantName ?? MESSAGE_TYPES[types.messageType], reference: message.rrn,
        },
      });
      transactionId = recorded.recordCardTransaction.transactionId;
    }
    const decisionMs = Math.round((performance.now() - started - waitedMs) * 100) / 100;
    const record: CardMessageDocument = {
      _id: messageId, state: 'decided', reversedBy: null, messageType: types.messageType, actionType: types.actionType, SvcCardId: message.svcCardId, SvcUserId: card?.SvcUserId ?? null,
      svcAggregatorId: card?.svcAggregatorId ?? null, amount: types.amount, currency: message.currency, stan: message.stan, rrn: message.rrn,
      originalStan: message.originalStan ?? null, responseCode, decidedBy, reason, transactionId, decisionMs, dtsReceived: new Date(),
    };
    await messages.replaceOne({ _id: messageId, state: 'pending' }, record);
    await recordEvent(this.db, 'card.authorization', { ...(record.SvcUserId ? { SvcUserId: record.SvcUserId } : {}), ...(record.svcAggregatorId ? { svcAggregatorId: record.svcAggregatorId } : {}) }, {
      messageId, messageType: record.messageType, SvcCardId: record.SvcCardId, responseCode, decidedBy, transactionId,
    });
    // Advices inform the aggregator; nobody waits for the answer. Stored after the decision's
    // event (never an advice without it) and before the decision is answered, then delivered at
    // least once on the retry schedule.
    if (card && config && card.svcAggregatorId && types.actionType === 'advice') {
      await this.deliveries.enqueue(
        { _id: `dlv_${messageId}_advice`, kind: 'webhook', svcMerchantId: null, svcAggregatorId: card.svcAggregatorId, eventType: 'card_authorization.advice', to: config.url, payload: webhookPayload(messageId, message, types, card, { responseCode }) },
        { wait: false },
      );
    }
    this.logger.info('card message decided', { messageId, messageType: record.messageType, responseCode, decidedBy, decisionMs });
    return this.view(record);
  }

  /**
   * Claims a message id. Returns null when this call won the claim and decides; otherwise the
   * stored answer once the winner has decided (a copy for another card or amount is refused 94).
   */
  private async claim(messageId: string, message: CardMessage, amount: MinorUnits) {
    const messages = cardMessagesCollection(this.db);
    try {
      await messages.insertOne({ _id: messageId, state: 'pending', SvcCardId: message.svcCardId, amount, dtsReceived: new Date() } as CardMessageDocument);
      return null;
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
    }
    for (let i = 0; i < 300; i += 1) {
      const earlier = await messages.findOne({ _id: messageId });
      if (earlier && (earlier.SvcCardId !== message.svcCardId || earlier.amount !== amount)) {
        return { messageId, messageType: message.messageType, responseCode: '94', approved: false, decidedBy: 'card' as const, reason: 'A different message was sent under the same stan and rrn.', transactionId: null, decisionMs: 0 };
      }
      if (earlier?.state === 'decided') return this.view(earlier);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw appError(ErrorCode.UNAVAILABLE, 'The first copy of this message is still being decided.');
  }

  private view(record: CardMessageDocument) {
    return {
      messageId: record._id, messageType: record.messageType, responseCode: record.responseCode, approved: record.responseCode === '00',
      decidedBy: record.decidedBy, reason: record.reason, transactionId: record.transactionId, decisionMs: record.decisionMs,
    };
  }
}
