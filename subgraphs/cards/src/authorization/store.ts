import { MongoServerError, type Db } from 'mongodb';
import type { CardTransactionPayload } from '../../../../platform/contracts/events.js';
import { fromMinor, type MinorUnits } from '../../../../platform/money/money.js';
import { webhookPayload } from './aggregator.js';
import { MESSAGE_TYPES, type CardMessage } from './check.js';
import { cardMessagesCollection, type CardMessageDocument } from './datasource.js';
import type { Decision, MessageFacts } from './decide.js';

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

/**
 * The decided message as it is stored: the log entry, the claim on its messageId (and, on a
 * reversal that credits or releases, on its original), and the `card.authorization` event.
 */
export function decidedRecord(facts: MessageFacts, decision: Decision, decisionMs: number): CardMessageDocument {
  const { messageId, message, types, card } = facts;
  const { responseCode, decidedBy, reason, holdId, credited, released } = decision;
  const reversal = types.messageType === '0420';
  const bound = credited?.original ?? released;
  const moved = credited ? credited.amount : types.amount;
  const financial = types.messageType === '0200' || types.messageType === '0220' || (reversal && credited !== null);
  const transaction: CardTransactionPayload | null =
    card && responseCode === '00' && financial && moved > 0
      ? {
          SvcAccountId: card.SvcAccountId,
          SvcUserId: card.SvcUserId,
          SvcCardId: card.SvcCardId,
          direction: reversal ? 'credit' : 'debit',
          amount: fromMinor(moved, message.currency),
          currency: message.currency,
          narrative: message.merchantName ?? MESSAGE_TYPES[types.messageType],
          reference: message.rrn,
          holdId,
        }
      : null;
  const now = new Date();
  // Advices inform the aggregator; nobody waits for the answer. Enqueued once the message is stored.
  const advice =
    card?.svcAggregatorId && types.actionType === 'advice' ? webhookPayload(messageId, message, types, card, { responseCode }) : null;
  const transactionId = transaction ? `txn_${messageId}` : null;
  return {
    _id: messageId,
    state: 'decided',
    bindingKey: bound ? `reverses:${bound._id}` : messageId,
    reverses: bound?._id ?? null,
    holdId,
    messageType: types.messageType,
    actionType: types.actionType,
    SvcCardId: message.svcCardId,
    SvcUserId: card?.SvcUserId ?? null,
    svcAggregatorId: card?.svcAggregatorId ?? null,
    amount: types.amount,
    currency: message.currency,
    stan: message.stan,
    rrn: message.rrn,
    originalStan: message.originalStan ?? null,
    responseCode,
    decidedBy,
    reason,
    transactionId,
    decisionMs,
    dtsReceived: now,
    advice,
    type: 'card.authorization',
    audience: {
      ...(card?.SvcUserId ? { SvcUserId: card.SvcUserId } : {}),
      ...(card?.svcAggregatorId ? { svcAggregatorId: card.svcAggregatorId } : {}),
    },
    payload: {
      messageId,
      messageType: types.messageType,
      SvcCardId: message.svcCardId,
      responseCode,
      decidedBy,
      transactionId,
      transaction,
      releasesHold: released && card ? { SvcAccountId: card.SvcAccountId, holdId: released.holdId! } : null,
    },
    dtsCreated: now,
    dtsPublished: null,
  };
}

/**
 * The one write: inserts the decided message. Of two copies decided at once in two processes,
 * the second finds the first's and answers with it; of two reversals of one original, the second
 * is stored as finding it reversed already.
 */
export async function storeDecided(
  db: Db,
  record: CardMessageDocument,
  message: CardMessage,
  amount: MinorUnits,
): Promise<{ stored: CardMessageDocument } | { answer: CardAuthorizationView }> {
  const messages = cardMessagesCollection(db);
  try {
    await messages.insertOne(record);
    return { stored: record };
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
  }
  const winner = await messages.findOne({ _id: record._id });
  if (winner) return { answer: answerTo(winner, message, amount) };
  if (!record.reverses) throw new Error(`card message ${record._id} collided on its binding without a stored copy`);
  const unbound: CardMessageDocument = {
    ...record,
    bindingKey: record._id,
    reverses: null,
    transactionId: null,
    reason: 'Advice acknowledged; the original is already reversed.',
    payload: { ...record.payload, transactionId: null, transaction: null, releasesHold: null },
  };
  return storeDecided(db, unbound, message, amount);
}

/** The answer to a message already decided: its stored answer, or 94 when a different message came under its stan and rrn. */
export function answerTo(stored: CardMessageDocument, message: CardMessage, amount: MinorUnits): CardAuthorizationView {
  if (stored.SvcCardId !== message.svcCardId || stored.amount !== amount) return differentMessage(stored._id, message.messageType);
  return view(stored);
}

/** The answer to a message whose messageId another message, of another card or amount, took. */
export function differentMessage(messageId: string, messageType: string): CardAuthorizationView {
  return {
    messageId,
    messageType,
    responseCode: '94',
    approved: false,
    decidedBy: 'card',
    reason: 'A different message was sent under the same stan and rrn.',
    transactionId: null,
    decisionMs: 0,
  };
}

/** A stored message's answer. */
export function view(record: CardMessageDocument): CardAuthorizationView {
  return {
    messageId: record._id,
    messageType: record.messageType,
    responseCode: record.responseCode,
    approved: record.responseCode === '00',
    decidedBy: record.decidedBy,
    reason: record.reason,
    transactionId: record.transactionId,
    decisionMs: record.decisionMs,
  };
}
