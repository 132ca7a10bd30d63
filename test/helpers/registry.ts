/**
 * A private npm registry for install tests: Verdaccio (a devDependency) on 127.0.0.1, with
 * no uplinks, so an install can only get what the test published to it. `stop()` kills the
 * whole process group; it also runs on process exit, SIGINT and SIGTERM, so no registry
 * outlives a failed, timed-out or interrupted test run.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

import { REPO_ROOT } from './child.js';

export interface LocalRegistry {
  url: string;
  /** An .npmrc that points npm at the registry, with a publish token. */
  npmrc: string;
  stop(): void;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function waitUntilUp(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited with ${child.exitCode}:\n${log()}`);
    try {
      const response = await fetch(`${url}-/ping`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`verdaccio did not answer ${url}-/ping within 60 s:\n${log()}`);
}

/** Adds a user the CouchDB way npm does, and returns its token. */
async function createUser(url: string): Promise<string> {
  const name = 'install-test';
  const response = await fetch(`${url}-/user/org.couchdb.user:${name}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, password: 'install-test-password', type: 'user', roles: [] }),
  });
  const body = (await response.json()) as { token?: string; error?: string };
  if (!response.ok || !body.token) throw new Error(`verdaccio refused the test user: ${response.status} ${JSON.stringify(body)}`);
  return body.token;
}

/** Resolves once nothing answers at `url` any more (throws after 10 s). */
export async function waitUntilDown(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      await fetch(`${url}-/ping`);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the registry at ${url} still answers after stop()`);
}

export async function startRegistry(dir: string): Promise<LocalRegistry> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const config = path.join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      `storage: ${path.join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${path.join(dir, 'htpasswd')}`,
      'uplinks: {}',
      'packages:',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const bin = path.join(REPO_ROOT, 'node_modules', 'verdaccio', 'bin', 'verdaccio');
  // detached: its own process group, so stop() takes any worker it forked with it
  const child = spawn(process.execPath, [bin, '--config', config, '--listen', `127.0.0.1:${port}`], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const onExit = () => killGroup(child);
  // a runner's timeout or ^C ends this process by signal, where 'exit' never fires
  const onSignal = (signal: NodeJS.Signals) => {
    killGroup(child);
    process.kill(process.pid, signal);
  };
  process.on('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const stop = () => {
    killGroup(child);
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  try {
    await waitUntilUp(url, child, () => output);
    const token = await createUser(url);
    const npmrc = path.join(dir, 'npmrc');
    writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
    return { url, npmrc, stop };
  } catch (error) {
    stop();
    throw error;
  }
}

/** `npm publish <tarball>` to the registry; throws with npm's output when it fails. */
export function publishTarball(registry: LocalRegistry, tarball: string, env: NodeJS.ProcessEnv): void {
  // --provenance=false: a dependency's own publishConfig may ask for provenance, which only CI providers give
  const result = spawnSync('npm', ['publish', tarball, '--registry', registry.url, '--ignore-scripts', '--tag', 'latest', '--provenance=false'], {
    encoding: 'utf8',
    env: { ...env, npm_config_userconfig: registry.npmrc },
  });
  if (result.status !== 0) throw new Error(`npm publish ${path.basename(tarball)} failed:\n${result.stdout}\n${result.stderr}`);
}
