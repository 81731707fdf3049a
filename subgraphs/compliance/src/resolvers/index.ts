import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Restriction } from './Restriction.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  Restriction,
  User,
};
