import type { PackageSystem, SystemRequirement } from '../../support/system-packages';
import { ensureSystemPackages } from '../../support/system-packages';

const GRPC: SystemRequirement = {
  debianPackage: 'python3-grpcio',
  probe: ['/usr/bin/python3', '-c', 'import grpc'],
};
const TOOLS: SystemRequirement = {
  debianPackage: 'python3-grpc-tools',
  probe: ['/usr/bin/python3', '-c', 'import grpc_tools.protoc'],
};

/** A machine on which `installed` packages' probes succeed, and apt-get answers from `aptAnswers` in turn. */
function machine(options: {
  installed: string[];
  canInstall: boolean;
  aptAnswers?: { ok: boolean; installs?: string[]; output?: string }[];
}): PackageSystem & { aptCalls: string[] } {
  const installed = new Set(options.installed);
  const answers = [...(options.aptAnswers ?? [])];
  const aptCalls: string[] = [];
  const byProbe = new Map([GRPC, TOOLS].map((r) => [r.probe.join(' '), r.debianPackage]));
  return {
    aptCalls,
    succeeds: (command) => installed.has(byProbe.get(command.join(' ')) ?? ''),
    canInstall: () => options.canInstall,
    aptGet: (args) => {
      aptCalls.push(args.join(' '));
      const answer = answers.shift() ?? { ok: false, output: 'unexpected apt-get call' };
      for (const name of answer.installs ?? []) installed.add(name);
      return { ok: answer.ok, output: answer.output ?? '' };
    },
  };
}

describe('ensureSystemPackages', () => {
  it('does nothing when every probe succeeds', () => {
    const system = machine({ installed: ['python3-grpcio', 'python3-grpc-tools'], canInstall: true });
    ensureSystemPackages('the test', [GRPC, TOOLS], system);
    expect(system.aptCalls).toEqual([]);
  });

  it('fails, saying what to install, when it may not install', () => {
    const system = machine({ installed: ['python3-grpcio'], canInstall: false });
    expect(() => ensureSystemPackages('the test', [GRPC, TOOLS], system)).toThrow(
      'the test needs the Debian packages python3-grpc-tools: run `sudo apt-get install -y --no-install-recommends python3-grpc-tools`',
    );
    expect(system.aptCalls).toEqual([]);
  });

  it('installs only what is missing, running apt-get update first when the install fails', () => {
    const system = machine({
      installed: [],
      canInstall: true,
      aptAnswers: [
        { ok: false },
        { ok: true },
        { ok: true, installs: ['python3-grpcio', 'python3-grpc-tools'] },
      ],
    });
    ensureSystemPackages('the test', [GRPC, TOOLS], system);
    expect(system.aptCalls).toEqual([
      'install -y --no-install-recommends python3-grpcio python3-grpc-tools',
      'update',
      'install -y --no-install-recommends python3-grpcio python3-grpc-tools',
    ]);
  });

  it('fails with apt-get output when the install did not provide the packages', () => {
    const system = machine({
      installed: [],
      canInstall: true,
      aptAnswers: [{ ok: false }, { ok: false, output: 'E: network unreachable' }],
    });
    expect(() => ensureSystemPackages('the test', [GRPC], system)).toThrow(
      /python3-grpcio[\s\S]*network unreachable/,
    );
  });
});
