import type { Logger } from '../../../../platform/runtime/logger.js';
import type { Outbox } from '../../../../platform/messaging/outbox.js';
import type { MinorUnits } from '../../../../platform/money/money.js';
import { cardMessagesCollection } from './datasource.js';
import { cardsCollection } from '../cards/datasource.js';
import { checkMessage, type CardMessage, type CheckedMessage } from './check.js';
import { decideMessage, findOriginal, type DecisionSources } from './decide.js';
import { answerTo, decidedRecord, differentMessage, storeDecided, view, type CardAuthorizationView } from './store.js';

/** What the authorizer works with: what a decision reads and asks, and the outbox of decided messages. */
export interface CardAuthorizerOptions extends DecisionSources {
  /** Carries each decided message's event at once, once it is stored. */
  messageOutbox: Outbox;
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

  /** Checks and decides a card message, or answers a copy of one with the first's answer. */
  async decide(message: CardMessage, logger: Logger): Promise<CardAuthorizationView> {
    const started = performance.now();
    const types = checkMessage(message);
    const messageId = `msg_${types.messageType}_${message.svcCardId}_${message.stan}_${message.rrn}`;
    // A network retransmits: the same message gets the same answer. A copy arriving while this
    // process decides the first waits for it; a copy at another replica loses the insert and reads it.
    const running = this.inFlight.get(messageId);
    if (running)
      return running.SvcCardId === message.svcCardId && running.amount === types.amount
        ? running.answer
        : differentMessage(messageId, message.messageType);
    const answer = this.decideFirst(messageId, message, types, started, logger);
    this.inFlight.set(messageId, { SvcCardId: message.svcCardId, amount: types.amount, answer });
    try {
      return await answer;
    } finally {
      this.inFlight.delete(messageId);
    }
  }

  private async decideFirst(
    messageId: string,
    message: CardMessage,
    types: CheckedMessage,
    started: number,
    logger: Logger,
  ): Promise<CardAuthorizationView> {
    const { db, funds } = this.options;
    const [card, earlier, original] = await Promise.all([
      cardsCollection(db).findOne({ _id: message.svcCardId }),
      cardMessagesCollection(db).findOne({ _id: messageId }),
      findOriginal(db, message, types),
    ]);
    if (earlier) return answerTo(earlier, message, types.amount);
    const facts = { messageId, message, types, card, original };
    const decision = await decideMessage(facts, this.options, logger);
    const decisionMs = Math.round((performance.now() - started - decision.waitedMs) * 100) / 100;
    const record = decidedRecord(facts, decision, decisionMs);
    const outcome = await storeDecided(db, record, message, types.amount);
    if ('answer' in outcome) {
      // Another copy of the message was stored first: what this attempt held is not its to keep.
      // Undone (a completed authorization's hold put back) only if the stored copy did not approve: an approved one completed it.
      if (decision.holdId && card)
        await funds.release([{ SvcAccountId: card.SvcAccountId, holdId: decision.holdId }], !outcome.answer.approved);
      return outcome.answer;
    }
    this.options.messageOutbox.stored(outcome.stored);
    logger.info('card message decided', {
      messageId,
      messageType: record.messageType,
      responseCode: record.responseCode,
      decidedBy: record.decidedBy,
      decisionMs,
    });
    return view(outcome.stored);
  }
}
