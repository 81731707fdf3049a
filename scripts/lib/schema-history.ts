// The breaking-change check: every commit that changed the committed API schema, compared with its parent.
import { execFileSync } from 'node:child_process';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import { buildSchema } from 'graphql';

/** Where the API schema lives in the repository (`npm run compose` writes it). */
export const API_SCHEMA_FILE = 'schema/api-schema.graphql';

/** The trailer with which a commit says why it breaks the API schema: `Schema-Break: <why>`. */
const REASON = /^Schema-Break:[ \t]*(\S.*)$/m;

/** The breaking changes from one API schema text to another, as inspector describes them. */
export async function breakingChanges(before: string, after: string): Promise<string[]> {
  const changes = await diff(buildSchema(before), buildSchema(after));
  return changes.filter((change) => change.criticality.level === CriticalityLevel.Breaking).map((change) => change.message);
}

/** A commit of the API schema's history, what it broke, and the reason it gave (null when none). */
export interface SchemaCommit {
  commit: string;
  subject: string;
  breaking: string[];
  reason: string | null;
}

/**
 * Every commit of `repo` that changed the API schema, newest first, each compared with its
 * parent's API schema (a commit that created the file breaks nothing).
 */
export async function schemaHistory(repo: string): Promise<SchemaCommit[]> {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: repo, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  // A shallow clone lacks the parents to compare with: every commit at its edge would pass unchecked.
  if (git('rev-parse', '--is-shallow-repository').trim() === 'true')
    throw new Error('The breaking-change check needs the whole history: this clone is shallow (git fetch --unshallow).');
  const fileAt = (revision: string): string | null => {
    try {
      return git('show', `${revision}:${API_SCHEMA_FILE}`);
    } catch {
      return null;
    }
  };
  const commits = git('log', '--full-history', '--format=%H', '--', API_SCHEMA_FILE).split('\n').filter(Boolean);
  const history: SchemaCommit[] = [];
  for (const commit of commits) {
    const after = fileAt(commit);
    // The first version of the file (or a root commit) breaks nothing; a merge is compared with its first parent.
    const before = fileAt(`${commit}^1`);
    const message = git('log', '-1', '--format=%B', commit);
    history.push({
      commit,
      subject: message.split('\n')[0] ?? '',
      breaking: before === null ? [] : after === null ? ['The API schema file was removed.'] : await breakingChanges(before, after),
      reason: REASON.exec(message)?.[1]?.trim() ?? null,
    });
  }
  return history;
}
