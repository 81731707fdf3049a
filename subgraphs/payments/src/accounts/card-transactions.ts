import { randomInt } from 'node:crypto';
import type { Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkAmount, isCurrencyCode, negate, ZERO, type MinorUnits } from '../../../../platform/money/money.js';
import { maskLastFour } from '../../../../platform/security/masking.js';
import { newId } from '../../../../platform/security/secrets.js';
import { postCardTransactions } from './card-postings.js';
import { accountsCollection } from './datasource.js';
import { accountMonth, transactionsCollection, type TransactionDocument } from './transactions-datasource.js';

/** The routing number of the accounts this bank opens. */
const BANK_ROUTING_NUMBER = '026009593';

/** The transaction of an approved card message, as card authorization sends it (the schema's CardTransactionInput). */
export interface CardTransaction {
  messageId: string;
  SvcAccountId: string;
  SvcUserId: string;
  SvcCardId: string;
  direction: string;
  amount: string;
  currency: string;
  narrative?: string | null;
  reference?: string | null;
  /** The hold the message placed while it was decided: released once the transaction is posted. */
  holdId?: string | null;
}

/** The most messages one `recordCardTransactions` call may carry. */
export const CARD_TRANSACTION_BATCH_LIMIT = 500;

/** What `recordCardTransactions` did: messages recorded by this call, and messages recorded before. */
export interface RecordedCardTransactions {
  recorded: number;
  alreadyRecorded: number;
}

/** The message's direction and amount, checked; `field` names an input member (`amount`, `input[3].amount`). */
function checkEntry(input: CardTransaction, field: (name: string) => string): { debit: boolean; amount: MinorUnits } {
  if (input.direction !== 'debit' && input.direction !== 'credit')
    throw appError(ErrorCode.VALIDATION_FAILED, `${field('direction')} must be debit or credit.`, { field: field('direction') });
  return { debit: input.direction === 'debit', amount: checkAmount(input.amount, input.currency, field('amount')) };
}

/** The transaction record of a checked card message; its id derives from the messageId. */
function transactionOf(input: CardTransaction, { debit, amount }: { debit: boolean; amount: MinorUnits }, now: Date): TransactionDocument {
  const id = `txn_${input.messageId}`;
  return {
    _id: id,
    transactionId: id,
    SvcAccountId: input.SvcAccountId,
    SvcUserId: input.SvcUserId,
    SvcCardId: input.SvcCardId,
    transactionIdBO: null,
    debitTransactionId: debit ? id : null,
    creditTransactionId: debit ? null : id,
    sourceSvcAccountId: debit ? input.SvcAccountId : null,
    destinationSvcAccountId: debit ? null : input.SvcAccountId,
    amount: debit ? negate(amount) : amount,
    debit: debit ? amount : ZERO,
    credit: debit ? ZERO : amount,
    currency: input.currency,
    transactionState: 'confirmed',
    isPending: false,
    isComplete: true,
    isDeclined: false,
    txnType: 'card',
    typeName: debit ? 'Card payment' : 'Card reversal',
    narrative: input.narrative ?? null,
    narrativeSource: null,
    narrativeDestination: input.narrative ?? null,
    reference: input.reference ?? null,
    attachments: null,
    labels: [],
    details: { memos: [] },
    internal: null,
    dtsRecorded: now,
    dtsValue: now,
    dtsBooked: now,
    dtsCompleted: now,
    accountMonth: accountMonth(input.SvcAccountId, now),
  };
}

/** Records the transaction of an approved card message once (its id derives from the messageId) and moves the balance once. */
export async function recordCardTransaction(db: Db, input: CardTransaction): Promise<TransactionDocument> {
  const entry = checkEntry(input, (name) => name);
  const account = await accountsCollection(db).findOne({ _id: input.SvcAccountId, SvcUserId: input.SvcUserId });
  if (!account) throw appError(ErrorCode.NOT_FOUND, `No account ${input.SvcAccountId} of the card's user.`, { field: 'SvcAccountId' });
  if (account.currency !== input.currency)
    throw appError(ErrorCode.VALIDATION_FAILED, `The account is in ${account.currency}, not ${input.currency}.`, { field: 'currency' });
  const doc = transactionOf(input, entry, new Date());
  await postCardTransactions(db, [doc], new Map(input.holdId ? [[doc._id, input.holdId]] : []));
  // The same message recorded already: answer with that record.
  return (await transactionsCollection(db).findOne({ _id: doc._id })) ?? doc;
}

/**
 * Records the transactions of a batch of approved card messages, each once by its messageId, and
 * moves each account's balance by them exactly once (see card-postings.ts). The whole batch is
 * checked before anything is written; a fault is VALIDATION_FAILED naming the item's field (an
 * unknown account too, which the forwarder parks rather than retries). A messageId twice in the
 * batch counts once recorded (or recorded before) and then as sent again.
 */
export async function recordCardTransactions(db: Db, inputs: readonly CardTransaction[]): Promise<RecordedCardTransactions> {
  if (inputs.length > CARD_TRANSACTION_BATCH_LIMIT) {
    throw appError(ErrorCode.VALIDATION_FAILED, `input may carry at most ${CARD_TRANSACTION_BATCH_LIMIT} messages.`, { field: 'input' });
  }
  const field = (i: number) => (name: string) => `input[${i}].${name}`;
  const entries = inputs.map((input, i) => checkEntry(input, field(i)));
  const accountIds = [...new Set(inputs.map((input) => input.SvcAccountId))];
  const accounts = new Map(
    (
      await accountsCollection(db)
        .find({ _id: { $in: accountIds } }, { projection: { SvcUserId: 1, currency: 1 } })
        .toArray()
    ).map((account) => [account._id, account]),
  );
  const now = new Date();
  const docs = new Map<string, TransactionDocument>();
  /** The hold each purchase placed, by transaction id: its posting takes it out. */
  const holdOf = new Map<string, string>();
  for (const [i, input] of inputs.entries()) {
    const account = accounts.get(input.SvcAccountId);
    if (!account || account.SvcUserId !== input.SvcUserId) {
      throw appError(
        ErrorCode.VALIDATION_FAILED,
        `${field(i)('SvcAccountId')}: no account ${input.SvcAccountId} of user ${input.SvcUserId}.`,
        { field: field(i)('SvcAccountId') },
      );
    }
    if (account.currency !== input.currency) {
      throw appError(
        ErrorCode.VALIDATION_FAILED,
        `${field(i)('currency')}: the account is in ${account.currency}, not ${input.currency}.`,
        { field: field(i)('currency') },
      );
    }
    const doc = transactionOf(input, entries[i]!, now);
    if (!docs.has(doc._id)) docs.set(doc._id, doc);
    if (input.holdId) holdOf.set(doc._id, input.holdId);
  }
  const moved = await postCardTransactions(db, [...docs.values()], holdOf);
  return { recorded: moved.size, alreadyRecorded: inputs.length - moved.size };
}

/** Opens a checking account; the account number is generated and only its last four digits are kept. */
export async function openCheckingAccount(db: Db, SvcUserId: string, currency: string) {
  if (!isCurrencyCode(currency)) throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 code.', { field: 'currency' });
  const id = newId('acc_');
  const lastFour = String(randomInt(0, 10_000)).padStart(4, '0');
  await accountsCollection(db).insertOne({
    _id: id,
    SvcAccountId: id,
    SvcUserId,
    type: 'checking',
    name: 'Checking',
    currency,
    accountNumberLastFour: lastFour,
    balance: ZERO,
    availableBalance: ZERO,
    dtsOpened: new Date(),
  });
  return { SvcAccountId: id, accountNumber: maskLastFour(lastFour)!, routingNumber: BANK_ROUTING_NUMBER };
}
