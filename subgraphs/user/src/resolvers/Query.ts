import { requireUser } from '../../../../platform/authorize.js';
import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';

export const Query: QueryResolvers = {
  me: async (_parent, _args, { principal, users }) => {
    const user = await users.load(requireUser(principal));
    if (!user) throw appError(ErrorCode.NOT_FOUND, 'The user of this session no longer exists.');
    return user;
  },
};
