import { fromMinor } from '../../../../platform/money/money.js';
import type { AchReturnRatesResolvers } from '../__generated__/resolvers-types.js';

/** ACH moves US dollars. */
const ACH_CURRENCY = 'USD';

export const AchReturnRates: AchReturnRatesResolvers = {
  adminReturnsAmount: (report) => fromMinor(report.adminReturnsAmount, ACH_CURRENCY),
  unAuthorizedReturnsAmount: (report) => fromMinor(report.unAuthorizedReturnsAmount, ACH_CURRENCY),
  totalReturnsAmount: (report) => fromMinor(report.totalReturnsAmount, ACH_CURRENCY),
  nsfReturnsAmount: (report) => fromMinor(report.nsfReturnsAmount, ACH_CURRENCY),
  fedDRAmount: (report) => fromMinor(report.fedDRAmount, ACH_CURRENCY),
};
