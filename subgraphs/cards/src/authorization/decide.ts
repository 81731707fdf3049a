import type { Db } from 'mongodb';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { fromMinor, HOME_CURRENCY, minor, type MinorUnits } from '../../../../platform/money/money.js';
import { deliverWebhook, type WebhookOutcome } from '../../../../platform/messaging/webhooks.js';
import type { RestrictionDecision } from '../../../../platform/domain/restrictions.js';
import type { CardDocument } from '../cards/datasource.js';
import { webhookConfigsCollection, type WebhookConfigDocument } from '../webhooks/datasource.js';
import { replyCode, webhookPayload } from './aggregator.js';
import type { CardMessage, CheckedMessage } from './check.js';
import { cardMessagesCollection, type CardMessageDocument } from './datasource.js';
import type { AccountFunds, FundsOutcome } from './funds.js';
import type { RestrictionReadModel } from './restriction-model.js';

const EVALUATE = `query ($input: TransactionProposalInput!) { evaluateTransaction(input: $input) { allowed rule reason } }`;

/** An advice that nothing refused: acknowledged. */
const ACKNOWLEDGED = { responseCode: '00', decidedBy: 'card', reason: 'Advice acknowledged.' } as const;

/** A message's answer: its response code, what decided it, and why. */
interface Outcome {
  responseCode: string;
  decidedBy: CardMessageDocument['decidedBy'];
  reason: string;
}

/** A decision: its outcome, and what it did to money on the way. */
export interface Decision extends Outcome {
  /** The hold this attempt placed on the account: a copy that loses the insert gives it back. */
  holdId: string | null;
  /** On a reversal of an approved purchase: the purchase, and what is credited back of it. */
  credited: { original: CardMessageDocument; amount: MinorUnits } | null;
  /** On a reversal of an approved authorization that holds: the authorization, whose hold is released. */
  released: CardMessageDocument | null;
  /** The time spent waiting for the aggregator, which is not the engine's. */
  waitedMs: number;
}

/** What a decision reads and asks besides the stored facts. */
export interface DecisionSources {
  db: Db;
  /** Asks compliance when the read model may be behind. */
  graph: GraphClient;
  rules: RestrictionReadModel;
  /** Holds an approved message's amount on its account (payments), last of the decision. */
  funds: AccountFunds;
  /** Whether webhooks may target internal addresses (WEBHOOK_ALLOW_INTERNAL). */
  allowInternalWebhooks: boolean;
}

/** The message being decided and the stored facts it is decided on. */
export interface MessageFacts {
  messageId: string;
  message: CardMessage;
  types: CheckedMessage;
  card: CardDocument | null;
  /** A reversal's or a completion's original, when the card has an approved one under the originalStan. */
  original: CardMessageDocument | null;
}

/**
 * The original a message refers to: of a reversal, an approved purchase (credited back) or
 * authorization (its hold released); of a completion, an approved authorization. Null for other messages.
 */
export function findOriginal(db: Db, message: CardMessage, types: CheckedMessage): Promise<CardMessageDocument | null> | null {
  const originalTypes =
    types.messageType === '0420' ? ['0100', '0200', '0220'] : types.messageType === '0220' && message.originalStan ? ['0100'] : null;
  if (!originalTypes) return null;
  // A purchase before an authorization under the same stan (stans wrap): a reversal credits money back first.
  return cardMessagesCollection(db).findOne(
    { SvcCardId: message.svcCardId, stan: message.originalStan!, messageType: { $in: originalTypes }, responseCode: '00' },
    { sort: { messageType: -1 } },
  );
}

/**
 * Decides a message from its facts, asking in turn the card, the restrictions, the aggregator (for
 * a request) and the funds; the first that refuses answers.
 */
export async function decideMessage(facts: MessageFacts, sources: DecisionSources, logger: Logger): Promise<Decision> {
  const { message, types, card, original } = facts;
  if (!card) return movesNothing({ responseCode: '14', decidedBy: 'card', reason: 'Unknown card.' });
  const refusal = cardRefusal(card, message.currency);
  if (refusal) return movesNothing(refusal);
  const reversal = types.messageType === '0420';
  if (!reversal) {
    const restricted = restrictionOutcome(await restrictionDecision(sources, card, message, types, logger));
    if (restricted) return movesNothing(restricted);
  }
  const answered = types.actionType === 'request' ? await askAggregator(facts, card, sources) : { ...ACKNOWLEDGED, waitedMs: 0 };
  if (answered.responseCode !== '00') return movesNothing(answered);
  const approved: Outcome = { responseCode: answered.responseCode, decidedBy: answered.decidedBy, reason: answered.reason };
  if (reversal) return { ...reversalOf(original, types.amount, approved), holdId: null, waitedMs: answered.waitedMs };
  // Last, the funds: an approved debit holds its amount on the account, whatever the aggregator answered.
  const held = await sources.funds.hold({
    messageId: facts.messageId,
    SvcAccountId: card.SvcAccountId,
    SvcUserId: card.SvcUserId,
    amount: types.amount,
    currency: message.currency,
    authorization: types.messageType === '0100',
    completes: original?.holdId ?? null,
    force: types.actionType === 'advice',
  });
  return {
    ...fundsOutcome(held, types.actionType === 'advice', approved),
    holdId: held.kind === 'held' ? held.holdId : null,
    credited: null,
    released: null,
    waitedMs: answered.waitedMs,
  };
}

/** A decision that holds, credits and releases nothing. */
function movesNothing(outcome: Outcome & { waitedMs?: number }): Decision {
  return {
    responseCode: outcome.responseCode,
    decidedBy: outcome.decidedBy,
    reason: outcome.reason,
    holdId: null,
    credited: null,
    released: null,
    waitedMs: outcome.waitedMs ?? 0,
  };
}

/** The card's own refusal: off, or in another currency than the message; null when it takes the message. */
function cardRefusal(card: CardDocument, currency: string): Outcome | null {
  if (card.status !== 'active' || !card.isActive || card.isClosed)
    return { responseCode: '62', decidedBy: 'card', reason: 'The card is off (blocked): no transaction is authorized.' };
  // A card that names no currency is in the home currency, as every record that names none.
  const cardCurrency = card.currency ?? HOME_CURRENCY;
  if (currency !== cardCurrency)
    return { responseCode: '57', decidedBy: 'card', reason: `The card is in ${cardCurrency}; currency conversion is not supported.` };
  return null;
}

/** The restrictions' refusal, or null when they allow the message; unanswered restrictions refuse. */
function restrictionOutcome(decision: Pick<RestrictionDecision, 'allowed' | 'reason'> | null): Outcome | null {
  if (!decision) return { responseCode: '91', decidedBy: 'restriction', reason: 'The restrictions could not be evaluated.' };
  return decision.allowed ? null : { responseCode: '57', decidedBy: 'restriction', reason: decision.reason };
}

/** The aggregator's answer to a request, or its default strategy when the reply is missing or malformed. */
function aggregatorOutcome(defaultStrategy: WebhookConfigDocument['defaultStrategy'], outcome: WebhookOutcome): Outcome {
  const code = replyCode(outcome);
  if (code)
    return {
      responseCode: code,
      decidedBy: 'aggregator',
      reason: code === '00' ? 'Approved by the aggregator.' : `Declined by the aggregator (${code}).`,
    };
  const why = outcome.kind === 'timeout' ? 'no reply in time' : outcome.kind === 'unreachable' ? 'webhook unreachable' : 'malformed reply';
  return {
    responseCode: defaultStrategy === 'approve' ? '00' : '05',
    decidedBy: 'defaultStrategy',
    reason: `Default strategy ${defaultStrategy} (${why}).`,
  };
}

/**
 * The approved outcome once the funds are asked. An advice reports a sale the network has made: it
 * is held without the balance condition, and acknowledged even when nothing could be held (its
 * posting takes the amount).
 */
function fundsOutcome(held: FundsOutcome, advice: boolean, approved: Outcome): Outcome {
  if (held.kind === 'held') return approved;
  if (advice) return { ...approved, reason: 'Advice acknowledged; nothing could be held, the posting takes the amount.' };
  if (held.kind === 'insufficient')
    return {
      responseCode: '51',
      decidedBy: 'funds',
      reason: 'Insufficient funds: the available balance and the overdraft limit do not cover the amount.',
    };
  if (held.kind === 'tooManyHolds') return { responseCode: '65', decidedBy: 'funds', reason: 'The account has too many card holds open.' };
  return { responseCode: '91', decidedBy: 'funds', reason: "The account's funds could not be checked." };
}

/**
 * What an approved reversal does: of an approved authorization, it releases the hold; of an
 * approved purchase, it credits back at most what the purchase debited; whether the purchase is
 * reversed already, the binding tells when the reversal is stored.
 */
function reversalOf(original: CardMessageDocument | null, amount: MinorUnits, approved: Outcome): Omit<Decision, 'holdId' | 'waitedMs'> {
  if (original?.messageType === '0100' && original.holdId)
    return {
      ...approved,
      reason: 'Advice acknowledged; what the authorization still holds is released.',
      credited: null,
      released: original,
    };
  if (original?.transactionId)
    return { ...approved, credited: { original, amount: minor(Math.min(amount, original.amount)) }, released: null };
  const reason =
    original?.messageType === '0100'
      ? 'Advice acknowledged; the authorization holds nothing.'
      : original
        ? 'Advice acknowledged; the original is already reversed.'
        : 'Advice acknowledged; no approved original to reverse.';
  return { ...approved, reason, credited: null, released: null };
}

/** Asks the card program's aggregator about a request, through its webhook; without one arranged, the request is declined. */
async function askAggregator(facts: MessageFacts, card: CardDocument, sources: DecisionSources): Promise<Outcome & { waitedMs: number }> {
  const config = card.svcAggregatorId ? await webhookConfigsCollection(sources.db).findOne({ _id: card.svcAggregatorId }) : null;
  if (!config)
    return { responseCode: '05', decidedBy: 'defaultStrategy', reason: 'No webhook is arranged for the card program.', waitedMs: 0 };
  // The messageId is the webhook-id: copies asked at two replicas at once are one webhook to the aggregator, which may drop the repeat.
  const outcome = await deliverWebhook(config, webhookPayload(facts.messageId, facts.message, facts.types, card), config.timeoutMs, {
    allowInternal: sources.allowInternalWebhooks,
    id: facts.messageId,
  });
  return { ...aggregatorOutcome(config.defaultStrategy, outcome), waitedMs: outcome.ms };
}

/** The restrictions' decision: from the read model, or from compliance while the model may be behind; null when neither answers. */
async function restrictionDecision(
  sources: DecisionSources,
  card: CardDocument,
  message: CardMessage,
  types: CheckedMessage,
  logger: Logger,
): Promise<Pick<RestrictionDecision, 'allowed' | 'reason'> | null> {
  const proposal = {
    txnType: message.currency === 'USD' ? 'USA' : 'international',
    amount: types.amount,
    currency: message.currency,
    sourceAccountType: 'checking',
  };
  const local = sources.rules.evaluate(card.SvcUserId, proposal);
  if (local) return local;
  try {
    const { evaluateTransaction } = await sources.graph.request<{ evaluateTransaction: { allowed: boolean; reason: string } }>(EVALUATE, {
      input: { SvcUserId: card.SvcUserId, ...proposal, amount: fromMinor(types.amount, message.currency) },
    });
    return evaluateTransaction;
  } catch (error) {
    logger.error('restriction evaluation failed', {
      error: (error as Error).message,
      cause: ((error as Error).cause as Error | undefined)?.message,
    });
    return null;
  }
}
