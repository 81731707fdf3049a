import { requireAggregator, requireService, requireUser } from '../../../../platform/security/authorize.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

/** The path user id must be the token's user; another user's id answers as if it did not exist. */
function ownUser(principal: Parameters<typeof requireUser>[0], SvcUserId: string): string {
  const userId = requireUser(principal);
  if (userId !== SvcUserId) throw appError(ErrorCode.NOT_FOUND, 'No such user.', { field: 'SvcUserId' });
  return userId;
}

export const Mutation: MutationResolvers = {
  login: (_parent, { input }, { authenticator, principal }) => authenticator.login(input, principal),
  logout: async (_parent, _args, { sessions, principal }) => {
    requireUser(principal);
    return principal.kind === 'user' && sessions.revoke(principal.sessionId);
  },
  updateUser: async (_parent, { input }, { principal, updater }) => ({
    success: true,
    user: await updater.update(requireUser(principal), input),
  }),
  confirmEmail: async (_parent, { SvcUserId, code }, { principal, confirmations }) => ({
    success: true,
    user: await confirmations.confirm(ownUser(principal, SvcUserId), 'email', code),
  }),
  confirmMobile: async (_parent, { SvcUserId, code }, { principal, confirmations }) => ({
    success: true,
    user: await confirmations.confirm(ownUser(principal, SvcUserId), 'mobile', code),
  }),
  syncAlerts: async (_parent, { alerts: input }, { principal, alerts }) => ({
    success: true,
    alerts: await alerts.sync(requireUser(principal), input),
  }),
  submitProspectData: (_parent, { input }, { principal, onboarding }) => onboarding.submitData(principal, input),
  uploadProspectImage: (_parent, { input }, { principal, onboarding }) => onboarding.uploadImage(principal, input),
  registerDevice: (_parent, { input }, { principal, onboarding, clientIp }) => onboarding.register(principal, input, clientIp),
  requestRecoveryCode: (_parent, { input }, { principal, onboarding }) => onboarding.requestRecoveryCode(principal, input),
  connectOnboardingSocket: (_parent, { input }, { principal, onboarding }) => onboarding.connectSocket(principal, input),
  aggregatorGetToken: (_parent, { input }, { aggregatorAuth }) => aggregatorAuth.getToken(input),
  aggregatorChangePassword: (_parent, { input }, { principal, aggregatorAuth }) =>
    aggregatorAuth.changePassword(requireAggregator(principal, 'write').login, input),
  setUserActive: (_parent, { SvcUserId, isActive }, { principal, blocks }) => {
    requireService(principal, ['operator']);
    return blocks.setActive(SvcUserId, isActive);
  },
};
