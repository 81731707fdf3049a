import type { Db } from 'mongodb';
import { convertOnce, type Migration, type MigrationLog, type StoredDocument } from '../../../platform/mongo/migrations.js';
import { legacyAmounts } from '../../../platform/money/legacy.js';
import { HOME_CURRENCY } from '../../../platform/money/money.js';
import { accountsCollection } from './accounts/datasource.js';
import { transactionsCollection } from './accounts/transactions-datasource.js';
import { achPaymentsCollection } from './ach/datasource.js';
import { beneficiariesCollection, beneficiaryUndosCollection } from './beneficiaries/datasource.js';
import { fundsTransactionsCollection } from './funds/datasource.js';
import { iouTransactionsCollection } from './ious/datasource.js';
import { paymentLinksCollection, refundsCollection } from './payment-links/datasource.js';

const MONEY_ID = 'payments-money-in-minor-units';

/** Amounts were stored as floats in the currency's units; they are integers of its minor units now. */
const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db, log: MigrationLog) {
    const convert = (collection: string, change: (doc: StoredDocument) => Record<string, unknown> | null) =>
      convertOnce(db, collection, MONEY_ID, change);
    const amounts = (collection: string, doc: StoredDocument, names: readonly string[], currency: unknown) =>
      legacyAmounts(log, { migration: MONEY_ID, collection }, doc, names, currency);
    await convert(accountsCollection(db).collectionName, (doc) => amounts('accounts', doc, ['balance', 'availableBalance'], doc.currency));
    await convert(transactionsCollection(db).collectionName, (doc) =>
      amounts('transactions', doc, ['amount', 'debit', 'credit'], doc.currency),
    );
    // A beneficiary's amount is in its defaultCurrency; an undo keeps the currency only when the change replaced it too.
    const currencies = new Map<string, unknown>();
    for await (const beneficiary of beneficiariesCollection(db).find({}, { projection: { defaultCurrency: 1 } }))
      currencies.set(beneficiary._id, beneficiary.defaultCurrency);
    await convert(beneficiariesCollection(db).collectionName, (doc) =>
      amounts('beneficiaries', doc, ['defaultAmount'], doc.defaultCurrency),
    );
    await convert(beneficiaryUndosCollection(db).collectionName, (doc) => {
      const previous = doc.previous as StoredDocument | undefined;
      const currency =
        previous && Object.hasOwn(previous, 'defaultCurrency') ? previous.defaultCurrency : currencies.get(String(doc.SvcBeneficiaryId));
      const amount = previous && amounts('beneficiaryUndos', previous, ['defaultAmount'], currency);
      return amount ? { 'previous.defaultAmount': amount.defaultAmount } : null;
    });
    await convert(iouTransactionsCollection(db).collectionName, (doc) => amounts('iouTransactions', doc, ['lent'], doc.currency));
    await convert(fundsTransactionsCollection(db).collectionName, (doc) =>
      amounts('fundsTransactions', doc, ['fee', 'balance', 'lastDepositAmount', 'ledgerBalance'], HOME_CURRENCY),
    );
    await convert(achPaymentsCollection(db).collectionName, (doc) => amounts('achPayments', doc, ['amount'], doc.currency));
    // The refunded total was kept as a hundredth of the link's units in every currency, under another name.
    await convert(paymentLinksCollection(db).collectionName, (doc) => {
      const refunded = amounts(
        'paymentLinks',
        { _id: doc._id, refunded: typeof doc.refundedCents === 'number' ? doc.refundedCents / 100 : 0 },
        ['refunded'],
        doc.currency,
      );
      return { ...amounts('paymentLinks', doc, ['amount'], doc.currency), ...refunded, refundedCents: undefined };
    });
    await convert(refundsCollection(db).collectionName, (doc) => {
      const ach = doc.ach as { payment: StoredDocument } | null;
      const payment = ach && amounts('refunds', ach.payment, ['amount'], ach.payment.currency);
      const changes = {
        ...amounts('refunds', doc, ['amount'], doc.currency),
        ...(payment ? { 'ach.payment.amount': payment.amount } : {}),
      };
      return Object.keys(changes).length > 0 ? changes : null;
    });
  },
};

/** The payments database's migrations, oldest first. */
export const PAYMENTS_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS];
