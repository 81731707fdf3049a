import { globalId } from '../../../../platform/graphql/global-id.js';
import { fromMinor, HOME_CURRENCY } from '../../../../platform/money/money.js';
import type { FundsTransactionResolvers } from '../__generated__/resolvers-types.js';

export const FundsTransaction: FundsTransactionResolvers = {
  id: (funds) => globalId('FundsTransaction', funds.svcFundsId),
  fee: (funds) => fromMinor(funds.fee, HOME_CURRENCY),
  balance: (funds) => fromMinor(funds.balance, HOME_CURRENCY),
  lastDepositAmount: (funds) => fromMinor(funds.lastDepositAmount, HOME_CURRENCY),
  ledgerBalance: (funds) => fromMinor(funds.ledgerBalance, HOME_CURRENCY),
};
