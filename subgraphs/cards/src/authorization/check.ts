import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { isOwnKey } from '../../../../platform/contracts/own.js';
import { checkString } from '../../../../platform/security/validate.js';
import { isCurrencyCode, toMinor, type MinorUnits } from '../../../../platform/money/money.js';

/** The message types the engine takes, by their ISO 8583 code, and what each is called. */
export const MESSAGE_TYPES = {
  '0100': 'authorization request',
  '0200': 'financial request',
  '0220': 'advice',
  '0420': 'reversal advice',
} as const;
/** The ISO 8583 code of a message type the engine takes. */
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

/** A checked message: its types, and its amount in minor units. */
export interface CheckedMessage {
  messageType: MessageType;
  actionType: 'request' | 'advice';
  amount: MinorUnits;
}

/** Checks a message's fields; returns its message type, action type and amount. */
export function checkMessage(message: CardMessage): CheckedMessage {
  const messageType = message.messageType;
  if (!isOwnKey(MESSAGE_TYPES, messageType))
    throw appError(ErrorCode.VALIDATION_FAILED, `messageType must be one of ${Object.keys(MESSAGE_TYPES).join(', ')}.`, {
      field: 'messageType',
    });
  const actionType = message.actionType ?? (messageType === '0100' || messageType === '0200' ? 'request' : 'advice');
  if (actionType !== 'request' && actionType !== 'advice')
    throw appError(ErrorCode.VALIDATION_FAILED, 'actionType must be request or advice.', { field: 'actionType' });
  if (!isCurrencyCode(message.currency))
    throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 currency code.', { field: 'currency' });
  const amount = toMinor(message.amount, message.currency, 'amount');
  if (!(amount > 0)) throw appError(ErrorCode.VALIDATION_FAILED, 'amount must be positive.', { field: 'amount' });
  checkString(message.stan, 'stan', { pattern: /^\d{6}$/, patternText: 'six digits' });
  checkString(message.rrn, 'rrn', { pattern: /^[A-Za-z0-9]{12}$/, patternText: '12 letters or digits' });
  checkString(message.mcc, 'mcc', { pattern: /^\d{4}$/, patternText: 'four digits' });
  checkString(message.merchantName, 'merchantName', { max: 100 });
  if (messageType === '0420')
    checkString(message.originalStan ?? '', 'originalStan', {
      pattern: /^\d{6}$/,
      patternText: 'the six-digit stan of the reversed message',
    });
  if (messageType === '0220')
    checkString(message.originalStan, 'originalStan', {
      pattern: /^\d{6}$/,
      patternText: 'the six-digit stan of the completed authorization',
    });
  return { messageType, actionType, amount };
}
