import { toJsonNumber } from '../../../../platform/money/money.js';
import type { WebhookOutcome } from '../../../../platform/messaging/webhooks.js';
import type { CardDocument } from '../cards/datasource.js';
import { MESSAGE_TYPES, type CardMessage, type CheckedMessage } from './check.js';

/** The card-authorization webhook's payload (designed: the spec does not show one). */
export function webhookPayload(
  messageId: string,
  message: CardMessage,
  types: CheckedMessage,
  card: Pick<CardDocument, 'SvcCardId' | 'lastFour'>,
  extra: Record<string, unknown> = {},
) {
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
