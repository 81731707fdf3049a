import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { API_SCHEMA_FILE, breakingChanges, schemaHistory } from '../../scripts/lib/schema-history.js';

const V1 = 'type Query { account(id: ID!): Account }\ntype Account { id: ID!, balance: Float, name: String }\n';
const ADDED = 'type Query { account(id: ID!): Account }\ntype Account { id: ID!, balance: Float, name: String, label: String }\n';
const REMOVED = 'type Query { account(id: ID!): Account }\ntype Account { id: ID!, balance: Float, label: String }\n';
const RETYPED = 'type Query { account(id: ID!): Account }\ntype Account { id: ID!, balance: String, label: String }\n';

describe('the breaking-change check', () => {
  const repo = mkdtempSync(path.join(tmpdir(), 'schema-history-'));
  afterAll(() => rmSync(repo, { recursive: true, force: true }));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' });
  const commit = (schema: string, message: string) => {
    writeFileSync(path.join(repo, API_SCHEMA_FILE), schema);
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', message);
  };

  it('tells breaking changes from additions', async () => {
    expect(await breakingChanges(V1, ADDED)).toEqual([]);
    expect(await breakingChanges(ADDED, REMOVED)).toEqual([expect.stringContaining("'name' was removed")]);
    expect((await breakingChanges(REMOVED, RETYPED))[0]).toContain('Float');
  });

  it('finds each commit of the API schema that breaks it, with the reason its message gives or none', async () => {
    git('init', '-q');
    mkdirSync(path.join(repo, 'schema'));
    commit(V1, 'The API schema');
    commit(ADDED, 'An added field');
    writeFileSync(path.join(repo, 'README'), 'unrelated');
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'Not about the schema');
    commit(REMOVED, 'Removes Account.name');
    commit(RETYPED, 'Balance as a string\n\nSchema-Break: money is never a float; clients were told in the changelog');
    git('rm', '-q', API_SCHEMA_FILE);
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'Drops the schema file');
    const history = await schemaHistory(repo);
    expect(history.map(({ subject, breaking, reason }) => [subject, breaking.length > 0, reason])).toEqual([
      ['Drops the schema file', true, null],
      ['Balance as a string', true, 'money is never a float; clients were told in the changelog'],
      ['Removes Account.name', true, null],
      ['An added field', false, null],
      ['The API schema', false, null],
    ]);
  });

  it('refuses to judge a shallow clone, whose first commit it could not compare', async () => {
    const shallow = mkdtempSync(path.join(tmpdir(), 'schema-shallow-'));
    try {
      execFileSync('git', ['clone', '-q', '--depth', '1', `file://${repo}`, shallow]);
      await expect(schemaHistory(shallow)).rejects.toThrow(/shallow/);
    } finally {
      rmSync(shallow, { recursive: true, force: true });
    }
  });
});
