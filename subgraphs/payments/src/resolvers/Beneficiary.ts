import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { maskLastFour } from '../../../../platform/security/masking.js';
import { defaultAmountOf } from '../beneficiaries/beneficiaries.js';
import type { BeneficiaryResolvers } from '../__generated__/resolvers-types.js';

export const Beneficiary: BeneficiaryResolvers = {
  id: (parent) => globalId('Beneficiary', parent.SvcBeneficiaryId),
  __resolveReference: async (reference, { beneficiaries, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const SvcBeneficiaryId = ownKey(reference, 'Beneficiary', 'SvcBeneficiaryId');
    if (SvcBeneficiaryId === null) return null;
    const beneficiary = await beneficiaries.load(SvcBeneficiaryId);
    return beneficiary && maySeeUser(principal, beneficiary.SvcUserId) ? beneficiary : null;
  },
  accountNumber: (beneficiary) => maskLastFour(beneficiary.accountNumberLastFour),
  destinationPAN: (beneficiary) => maskLastFour(beneficiary.destinationPANLastFour),
  userId: (beneficiary) => beneficiary.SvcUserId,
  defaultAmount: (beneficiary) => defaultAmountOf(beneficiary),
};
