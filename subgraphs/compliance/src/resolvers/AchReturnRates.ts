import { fromMinor, HOME_CURRENCY } from '../../../../platform/money/money.js';
import type { AchReturnRatesResolvers } from '../__generated__/resolvers-types.js';

export const AchReturnRates: AchReturnRatesResolvers = {
  adminReturnsAmount: (report) => fromMinor(report.adminReturnsAmount, HOME_CURRENCY),
  unAuthorizedReturnsAmount: (report) => fromMinor(report.unAuthorizedReturnsAmount, HOME_CURRENCY),
  totalReturnsAmount: (report) => fromMinor(report.totalReturnsAmount, HOME_CURRENCY),
  nsfReturnsAmount: (report) => fromMinor(report.nsfReturnsAmount, HOME_CURRENCY),
  fedDRAmount: (report) => fromMinor(report.fedDRAmount, HOME_CURRENCY),
};
