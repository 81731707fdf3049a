import { globalId } from '../../../../platform/graphql/global-id.js';
import { fromMinor } from '../../../../platform/money/money.js';
import type { FundsTransactionResolvers } from '../__generated__/resolvers-types.js';

/** An aggregator's funding is in US dollars. */
const FUNDS_CURRENCY = 'USD';

export const FundsTransaction: FundsTransactionResolvers = {
  id: (funds) => globalId('FundsTransaction', funds.svcFundsId),
  fee: (funds) => fromMinor(funds.fee, FUNDS_CURRENCY),
  balance: (funds) => fromMinor(funds.balance, FUNDS_CURRENCY),
  lastDepositAmount: (funds) => fromMinor(funds.lastDepositAmount, FUNDS_CURRENCY),
  ledgerBalance: (funds) => fromMinor(funds.ledgerBalance, FUNDS_CURRENCY),
};
