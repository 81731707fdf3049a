import { requireAggregator, requireService, requireUser } from '../../../../platform/security/authorize.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkString } from '../../../../platform/security/validate.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';

export const Query: QueryResolvers = {
  me: async (_parent, _args, { principal, users }) => {
    const user = await users.load(requireUser(principal));
    if (!user) throw appError(ErrorCode.NOT_FOUND, 'The user of this session no longer exists.');
    return user;
  },
  user: (_parent, { SvcUserId }, { principal, users }) => {
    // Card issuing checks a customer exists; IOUs check the other party does.
    requireService(principal, ['cards', 'payments']);
    return users.load(SvcUserId);
  },
  alerts: (_parent, _args, { principal, alerts }) => alerts.list(requireUser(principal)),
  geocode: (_parent, { address }, { principal, geocoder }) => {
    requireUser(principal);
    return geocoder.geocode(checkString(address, 'address', { min: 1, max: 200, safeText: true })!);
  },
  aggregatorViewer: (_parent, _args, { principal }) => {
    const aggregator = requireAggregator(principal, 'read');
    return { login: aggregator.login, svcAggregatorId: aggregator.svcAggregatorId, tokenType: aggregator.tokenType };
  },
};
