import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCommand, findOnPath } from '../support/system-packages';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/** The test support's own etcd: it starts, answers, survives a kill and restart, freezes and thaws. */

function health(endpoint: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = get(`${endpoint}/health`, { timeout: timeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(body));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', reject);
  });
}

describe('startEtcd', () => {
  let etcd: EtcdProcess | undefined;

  afterEach(async () => {
    await etcd?.stop();
    etcd = undefined;
  });

  it('starts a member on a free 127.0.0.1 port that answers, and stop() removes its data directory', async () => {
    etcd = await startEtcd();
    expect(etcd.endpoints).toHaveLength(1);
    expect(etcd.endpoints[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(etcd.endpoints[0]).not.toBe('http://127.0.0.1:2379');
    expect(await health(etcd.endpoints[0])).toContain('"health":"true"');
    const { dataDir } = etcd;
    expect(existsSync(dataDir)).toBe(true);
    await etcd.stop();
    expect(existsSync(dataDir)).toBe(false);
    await expect(health(etcd.endpoints[0])).rejects.toThrow();
  }, 60_000);

  it('restarts on the same endpoint after kill(), and pause() stops it answering until resume()', async () => {
    etcd = await startEtcd();
    const [endpoint] = etcd.endpoints;
    await etcd.kill();
    await expect(health(endpoint)).rejects.toThrow();
    await etcd.restart();
    expect(etcd.endpoints).toEqual([endpoint]);
    expect(await health(endpoint)).toContain('"health":"true"');

    await etcd.pause();
    await expect(health(endpoint, 300)).rejects.toThrow('timeout');
    etcd.resume();
    expect(await health(endpoint)).toContain('"health":"true"');
  }, 60_000);
});

describe('ensureCommand', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'cohort-path-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('finds an executable on PATH and ignores a file that is not executable', async () => {
    writeFileSync(join(dir, 'runnable'), '#!/bin/sh\n');
    chmodSync(join(dir, 'runnable'), 0o755);
    writeFileSync(join(dir, 'plain'), '');
    expect(findOnPath('runnable', dir)).toBe(join(dir, 'runnable'));
    expect(findOnPath('plain', dir)).toBeUndefined();
    await expect(ensureCommand('runnable', { debianPackage: 'x' }, dir)).resolves.toBe(join(dir, 'runnable'));
  });

  it('names the Debian package to install when it may not install it itself', async () => {
    await expect(
      ensureCommand('cohort-missing', { debianPackage: 'etcd-server' }, dir, {
        succeeds: () => false,
        canInstall: () => false,
        aptGet: () => ({ ok: false, output: 'apt-get must not run' }),
      }),
    ).rejects.toThrow(
      /'cohort-missing' is not on PATH.*apt-get install -y --no-install-recommends etcd-server/,
    );
  });
});
