import { GraphQLError } from 'graphql';
import { MongoServerError, type Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { busDispatcher, CarriedInPart, graphForwarder, type Dispatcher, type Outbox } from '../../../../platform/messaging/outbox.js';
import type { EventBus } from '../../../../platform/messaging/event-bus.js';
import type { CardTransactionPayload, OutboxEvent } from '../../../../platform/contracts/events.js';
import { isOwnKey } from '../../../../platform/contracts/own.js';
import { checkString } from '../../../../platform/security/validate.js';
import { fromMinor, HOME_CURRENCY, isCurrencyCode, minor, toJsonNumber, toMinor, type MinorUnits } from '../../../../platform/money/money.js';
import type { Deliveries } from '../../../../platform/messaging/deliveries.js';
import { deliverWebhook, type WebhookOutcome } from '../../../../platform/messaging/webhooks.js';
import type { RestrictionDecision } from '../../../../platform/domain/restrictions.js';
import { cardMessagesCollection, type CardMessageDocument } from './datasource.js';
import type { RestrictionReadModel } from './restriction-model.js';
import { releaseHolds, type AccountFunds } from './funds.js';
import { cardsCollection, type CardDocument } from '../cards/datasource.js';
import { webhookConfigsCollection } from '../webhooks/datasource.js';

const MESSAGE_TYPES = { '0100': 'authorization request', '0200': 'financial request', '0220': 'advice', '0420': 'reversal advice' } as const;
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
const RECORD = `mutation ($input: [CardTransactionInput!]!) { recordCardTransactions(input: $input) { recorded alreadyRecorded } }`;

/** A checked message: its types, and its amount in minor units. */
export interface CheckedMessage {
  messageType: MessageType;
  actionType: 'request' | 'advice';
  amount: MinorUnits;
}

/** Checks a message's fields; returns its message type, action type and amount. */
function checkMessage(message: CardMessage): CheckedMessage {
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
  if (messageType === '0220') checkString(message.originalStan, 'originalStan', { pattern: /^\d{6}$/, patternText: 'the six-digit stan of the completed authorization' });
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

/** What a card message is answered. */
export interface CardAuthorizationView {
  messageId: string;
  messageType: string;
  responseCode: string;
  approved: boolean;
  decidedBy: CardMessageDocument['decidedBy'];
  reason: string;
  transactionId: string | null;
  decisionMs: number;
}

/** What the authorizer works with: the cards database, its read model of restrictions, and the outbox of decided messages. */
export interface CardAuthorizerOptions {
  db: Db;
  /** Asks compliance when the read model may be behind. */
  graph: GraphClient;
  rules: RestrictionReadModel;
  /** Holds an approved message's amount on its account (payments), last of the decision. */
  funds: AccountFunds;
  /** Carries each decided message's event at once, once it is stored. */
  messageOutbox: Outbox;
  /** Whether webhooks may target internal addresses (WEBHOOK_ALLOW_INTERNAL). */
  allowInternalWebhooks: boolean;
}

/** A message being decided in this process, so that a copy arriving meanwhile waits for its answer. */
interface InFlight {
  SvcCardId: string;
  amount: MinorUnits;
  answer: Promise<CardAuthorizationView>;
}

/**
 * The authorization engine for ISO 8583-style card messages. A decision reads the card, the
 * message's earlier copy (and a reversal's original), the aggregator's webhook configuration for a
 * request, and decides from local state: the restrictions come from the read model. It then writes
 * once: the message document is the claim on its messageId, the decision and the event that
 * payments, subscribers and the advice webhook follow from, asynchronously.
 */
export class CardAuthorizer {
  private readonly inFlight = new Map<string, InFlight>();

  constructor(private readonly options: CardAuthorizerOptions) {}

  async decide(message: CardMessage, logger: Logger): Promise<CardAuthorizationView> {
    const started = performance.now();
    const types = checkMessage(message);
    const messageId = `msg_${types.messageType}_${message.svcCardId}_${message.stan}_${message.rrn}`;
    // A network retransmits: the same message gets the same answer. A copy arriving while this
    // process decides the first waits for it; a copy at another replica loses the insert and reads it.
    const running = this.inFlight.get(messageId);
    if (running) return running.SvcCardId === message.svcCardId && running.amount === types.amount ? running.answer : differentMessage(messageId, message.messageType);
    const answer = this.decideFirst(messageId, message, types, started, logger);
    this.inFlight.set(messageId, { SvcCardId: message.svcCardId, amount: types.amount, answer });
    try {
      return await answer;
    } finally {
      this.inFlight.delete(messageId);
    }
  }

  private async decideFirst(messageId: string, message: CardMessage, types: CheckedMessage, started: number, logger: Logger): Promise<CardAuthorizationView> {
    const { db } = this.options;
    const messages = cardMessagesCollection(db);
    const reversal = types.messageType === '0420';
    // A reversal's original: an approved purchase (credited back) or authorization (its hold released); a completion's: an approved authorization.
    const originalTypes = reversal ? ['0100', '0200', '0220'] : types.messageType === '0220' && message.originalStan ? ['0100'] : null;
    const [card, earlier, original] = await Promise.all([
      cardsCollection(db).findOne({ _id: message.svcCardId }),
      messages.findOne({ _id: messageId }),
      // A purchase before an authorization under the same stan (stans wrap): a reversal credits money back first.
      originalTypes ? messages.findOne({ SvcCardId: message.svcCardId, stan: message.originalStan!, messageType: { $in: originalTypes }, responseCode: '00' }, { sort: { messageType: -1 } }) : null,
    ]);
    if (earlier?.state === 'decided') return answerTo(earlier, message, types.amount);

    let waitedMs = 0;
    let responseCode = '00';
    let decidedBy: CardMessageDocument['decidedBy'] = 'card';
    let reason = types.actionType === 'advice' ? 'Advice acknowledged.' : 'Approved.';
    if (!card) {
      [responseCode, reason] = ['14', 'Unknown card.'];
    } else if (card.status !== 'active' || !card.isActive || card.isClosed) {
      [responseCode, reason] = ['62', 'The card is off (blocked): no transaction is authorized.'];
    } else if (message.currency !== (card.currency ?? HOME_CURRENCY)) {
      // A card that names no currency is in the home currency, as every record that names none.
      [responseCode, decidedBy, reason] = ['57', 'card', `The card is in ${card.currency ?? HOME_CURRENCY}; currency conversion is not supported.`];
    } else {
      if (!reversal) {
        const decision = await this.restrictionDecision(card, message, types, logger);
        if (!decision) [responseCode, decidedBy, reason] = ['91', 'restriction', 'The restrictions could not be evaluated.'];
        else if (!decision.allowed) [responseCode, decidedBy, reason] = ['57', 'restriction', decision.reason];
      }
      if (responseCode === '00' && types.actionType === 'request') {
        const config = card.svcAggregatorId ? await webhookConfigsCollection(db).findOne({ _id: card.svcAggregatorId }) : null;
        if (!config) {
          [responseCode, decidedBy, reason] = ['05', 'defaultStrategy', 'No webhook is arranged for the card program.'];
        } else {
          // The messageId is the webhook-id: copies asked at two replicas at once are one webhook to the aggregator, which may drop the repeat.
          const outcome = await deliverWebhook(config, webhookPayload(messageId, message, types, card), config.timeoutMs, { allowInternal: this.options.allowInternalWebhooks, id: messageId });
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

    // Last, the funds: an approved debit holds its amount on the account, whatever the aggregator
    // answered. An advice reports a sale the network has made: it is held without the balance
    // condition, and acknowledged even when nothing could be held (its posting takes the amount).
    let holdId: string | null = null;
    const isAdvice = types.actionType === 'advice';
    if (card && responseCode === '00' && !reversal) {
      const held = await this.options.funds.hold({
        messageId, SvcAccountId: card.SvcAccountId, SvcUserId: card.SvcUserId, amount: types.amount, currency: message.currency,
        authorization: types.messageType === '0100', completes: original?.holdId ?? null, force: isAdvice,
      });
      if (held.kind === 'held') holdId = held.holdId;
      else if (isAdvice) reason = 'Advice acknowledged; nothing could be held, the posting takes the amount.';
      else if (held.kind === 'insufficient') [responseCode, decidedBy, reason] = ['51', 'funds', 'Insufficient funds: the available balance and the overdraft limit do not cover the amount.'];
      else if (held.kind === 'tooManyHolds') [responseCode, decidedBy, reason] = ['65', 'funds', 'The account has too many card holds open.'];
      else [responseCode, decidedBy, reason] = ['91', 'funds', 'The account\'s funds could not be checked.'];
    }

    // A reversal credits back at most what an approved purchase of this card debited, once; of an
    // approved authorization, it releases the hold.
    let credited: { original: CardMessageDocument; amount: MinorUnits } | null = null;
    let released: CardMessageDocument | null = null;
    if (card && responseCode === '00' && reversal) {
      if (original?.messageType === '0100' && original.holdId) [released, reason] = [original, 'Advice acknowledged; what the authorization still holds is released.'];
      else if (original?.transactionId && !original.reversedBy) credited = { original, amount: minor(Math.min(types.amount, original.amount)) };
      else reason = original?.messageType === '0100' ? 'Advice acknowledged; the authorization holds nothing.' : original ? 'Advice acknowledged; the original is already reversed.' : 'Advice acknowledged; no approved original to reverse.';
    }
    const bound = credited?.original ?? released;
    const moved = credited ? credited.amount : types.amount;
    const financial = types.messageType === '0200' || types.messageType === '0220' || (reversal && credited !== null);
    const transaction: CardTransactionPayload | null = card && responseCode === '00' && financial && moved > 0
      ? {
          SvcAccountId: card.SvcAccountId, SvcUserId: card.SvcUserId, SvcCardId: card.SvcCardId, direction: reversal ? 'credit' : 'debit',
          amount: fromMinor(moved, message.currency), currency: message.currency, narrative: message.merchantName ?? MESSAGE_TYPES[types.messageType], reference: message.rrn,
          holdId,
        }
      : null;
    const decisionMs = Math.round((performance.now() - started - waitedMs) * 100) / 100;
    const now = new Date();
    // Advices inform the aggregator; nobody waits for the answer. Enqueued once the message is stored.
    const advice = card?.svcAggregatorId && types.actionType === 'advice' ? webhookPayload(messageId, message, types, card, { responseCode }) : null;
    const transactionId = transaction ? `txn_${messageId}` : null;
    const record: CardMessageDocument = {
      _id: messageId, state: 'decided', bindingKey: bound ? `reverses:${bound._id}` : messageId, reverses: bound?._id ?? null, holdId,
      messageType: types.messageType, actionType: types.actionType, SvcCardId: message.svcCardId, SvcUserId: card?.SvcUserId ?? null,
      svcAggregatorId: card?.svcAggregatorId ?? null, amount: types.amount, currency: message.currency, stan: message.stan, rrn: message.rrn,
      originalStan: message.originalStan ?? null, responseCode, decidedBy, reason, transactionId, decisionMs, dtsReceived: now, advice,
      type: 'card.authorization',
      audience: { ...(card?.SvcUserId ? { SvcUserId: card.SvcUserId } : {}), ...(card?.svcAggregatorId ? { svcAggregatorId: card.svcAggregatorId } : {}) },
      payload: {
        messageId, messageType: types.messageType, SvcCardId: message.svcCardId, responseCode, decidedBy, transactionId, transaction,
        releasesHold: released && card ? { SvcAccountId: card.SvcAccountId, holdId: released.holdId! } : null,
      },
      dtsCreated: now, dtsPublished: null,
    };
    const outcome = await this.store(record, message, types.amount);
    if ('answer' in outcome) {
      // Another copy of the message was stored first: what this attempt held is not its to keep.
      // Undone (a completed authorization's hold put back) only if the stored copy did not approve: an approved one completed it.
      if (holdId && card) await this.options.funds.release([{ SvcAccountId: card.SvcAccountId, holdId }], !outcome.answer.approved);
      return outcome.answer;
    }
    this.options.messageOutbox.stored(outcome.stored);
    logger.info('card message decided', { messageId, messageType: record.messageType, responseCode, decidedBy, decisionMs });
    return view(outcome.stored);
  }

  /**
   * The one write: inserts the decided message. Of two copies decided at once in two processes,
   * the second finds the first's and answers with it; of two reversals of one original, the second
   * is stored as finding it reversed already.
   */
  private async store(record: CardMessageDocument, message: CardMessage, amount: MinorUnits): Promise<{ stored: CardMessageDocument } | { answer: CardAuthorizationView }> {
    const messages = cardMessagesCollection(this.options.db);
    try {
      await messages.insertOne(record);
      return { stored: record };
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
    }
    const winner = await messages.findOne({ _id: record._id });
    if (winner?.state === 'decided') return { answer: answerTo(winner, message, amount) };
    if (!record.reverses) throw new Error(`card message ${record._id} collided on its binding without a stored copy`);
    const unbound: CardMessageDocument = {
      ...record, bindingKey: record._id, reverses: null, transactionId: null, reason: 'Advice acknowledged; the original is already reversed.',
      payload: { ...record.payload, transactionId: null, transaction: null, releasesHold: null },
    };
    return this.store(unbound, message, amount);
  }

  /** The restrictions' decision: from the read model, or from compliance while the model may be behind; null when neither answers. */
  private async restrictionDecision(card: CardDocument, message: CardMessage, types: CheckedMessage, logger: Logger): Promise<Pick<RestrictionDecision, 'allowed' | 'reason'> | null> {
    const proposal = { txnType: message.currency === 'USD' ? 'USA' : 'international', amount: types.amount, currency: message.currency, sourceAccountType: 'checking' };
    const local = this.options.rules.evaluate(card.SvcUserId, proposal);
    if (local) return local;
    try {
      const { evaluateTransaction } = await this.options.graph.request<{ evaluateTransaction: { allowed: boolean; reason: string } }>(EVALUATE, {
        input: { SvcUserId: card.SvcUserId, ...proposal, amount: fromMinor(types.amount, message.currency) },
      });
      return evaluateTransaction;
    } catch (error) {
      logger.error('restriction evaluation failed', { error: (error as Error).message, cause: ((error as Error).cause as Error | undefined)?.message });
      return null;
    }
  }
}

/** The answer to a message already decided: its stored answer, or 94 when a different message came under its stan and rrn. */
function answerTo(stored: CardMessageDocument, message: CardMessage, amount: MinorUnits): CardAuthorizationView {
  if (stored.SvcCardId !== message.svcCardId || stored.amount !== amount) return differentMessage(stored._id, message.messageType);
  return view(stored);
}

function differentMessage(messageId: string, messageType: string): CardAuthorizationView {
  return { messageId, messageType, responseCode: '94', approved: false, decidedBy: 'card', reason: 'A different message was sent under the same stan and rrn.', transactionId: null, decisionMs: 0 };
}

function view(record: CardMessageDocument): CardAuthorizationView {
  return {
    messageId: record._id, messageType: record.messageType, responseCode: record.responseCode, approved: record.responseCode === '00',
    decidedBy: record.decidedBy, reason: record.reason, transactionId: record.transactionId, decisionMs: record.decisionMs,
  };
}

/**
 * Carries decided messages to all that follows from them, in one lane with one mark per message
 * (marking rewrites the document, the dearest part of carrying on the embedded database): to the
 * event bus (subscriptions), into the delivery log (advice webhooks), and to payments (the
 * transactions of a batch in one call, and the holds its reversals of authorizations release). Each receiver drops repeats by id, so a batch carried
 * again after a failure changes nothing twice.
 */
export function decisionFollowers(bus: EventBus, graph: GraphClient, db: Db, deliveries: Deliveries): Dispatcher {
  const toBus = busDispatcher(bus);
  const toPayments = graphForwarder({
    name: 'card transactions to payments', types: ['card.authorization'], batch: 100, graph, mutation: RECORD,
    variablesOf: (events) => ({ input: events.flatMap((event) => (event.payload.transaction ? [{ messageId: event.payload.messageId, ...event.payload.transaction }] : [])) }),
  });
  return {
    name: 'card decisions',
    mark: 'dtsPublished',
    batch: 100,
    eager: false,
    async send(events: OutboxEvent[]) {
      const messages = events as CardMessageDocument[];
      // The three go at once; if any fails, the whole batch goes again (published in part included).
      await Promise.all([
        toBus.send(events).catch((error: unknown) => {
          throw error instanceof CarriedInPart ? error.cause : error;
        }),
        enqueueAdvices(db, deliveries, messages),
        messages.some((message) => message.payload.transaction) ? toPayments.send(events) : null,
        releaseHolds(graph, messages.flatMap((message) => (message.payload.releasesHold ? [message.payload.releasesHold] : []))),
      ]);
    },
    // Parked only for what payments refuses in the message itself; a gateway or payments that does
    // not know the mutation yet (a rolling upgrade) is away, and the batch waits for it.
    refuses: (error) => error instanceof GraphQLError && error.extensions.code === 'VALIDATION_FAILED',
  };
}

/** Enqueues the advice webhook of each decided advice once (by its delivery id): delivered at least once, on the retry schedule. */
async function enqueueAdvices(db: Db, deliveries: Deliveries, messages: readonly CardMessageDocument[]): Promise<void> {
  const advices = messages.filter((message) => message.advice && message.svcAggregatorId);
  if (advices.length === 0) return;
  const aggregators = [...new Set(advices.map((message) => message.svcAggregatorId!))];
  const configs = new Map((await webhookConfigsCollection(db).find({ _id: { $in: aggregators } }).toArray()).map((config) => [config._id, config]));
  await Promise.all(advices.map(async (message) => {
    const config = configs.get(message.svcAggregatorId!);
    if (!config) return;
    await deliveries.enqueue(
      { _id: `dlv_${message._id}_advice`, kind: 'webhook', svcMerchantId: null, svcAggregatorId: config._id, eventType: 'card_authorization.advice', to: config.url, payload: message.advice! },
      { wait: false },
    );
  }));
}
