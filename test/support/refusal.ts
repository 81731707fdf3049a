import { GraphQLError } from 'graphql';

/** The extensions of the GraphQLError that `act` throws; fails when it throws nothing. */
export function refusal(act: () => unknown): Record<string, unknown> {
  try {
    act();
  } catch (error) {
    if (error instanceof GraphQLError) return error.extensions;
    throw error;
  }
  throw new Error('nothing was refused');
}
