/** A reference to a user owned by the user subgraph, as other subgraphs hold it. */
export interface UserReference {
  SvcUserId: string;
}

/** A reference to an account owned by the payments subgraph. */
export interface AccountReference {
  SvcAccountId: string;
}
