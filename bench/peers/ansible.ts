// Ansible as a peer, entirely local: an inventory of aliases that all resolve to this
// machine through the local connection plugin, and ANSIBLE_* settings that keep its
// temp files and caches inside this run's directory.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface AnsibleSetup {
  inventory: string;
  env: NodeJS.ProcessEnv;
  hosts: string[];
}

/**
 * `count` host aliases (bench-host-01…), each with ansible_connection=local. The Python
 * interpreter is named so that Ansible skips interpreter discovery, which would add a
 * probe per host and a warning to every run.
 */
export function prepareAnsible(dir: string, count: number): AnsibleSetup {
  mkdirSync(dir, { recursive: true });
  const hosts = Array.from({ length: count }, (_, i) => `bench-host-${String(i + 1).padStart(2, '0')}`);
  const inventory = path.join(dir, 'inventory.ini');
  const vars = 'ansible_connection=local ansible_python_interpreter=/usr/bin/python3';
  writeFileSync(
    inventory,
    ['[bench]', ...hosts.map((h) => `${h} ${vars}`), '', '[local]', `localhost ${vars}`, ''].join('\n'),
  );
  const home = path.join(dir, 'home');
  mkdirSync(home, { recursive: true });
  return {
    inventory,
    hosts,
    env: {
      ...process.env,
      ANSIBLE_HOME: home,
      ANSIBLE_LOCAL_TEMP: path.join(home, 'tmp'),
      ANSIBLE_REMOTE_TEMP: path.join(home, 'remote-tmp'),
      ANSIBLE_HOST_KEY_CHECKING: 'False',
      ANSIBLE_RETRY_FILES_ENABLED: 'False',
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_DEPRECATION_WARNINGS: 'False',
    },
  };
}

/** `ansible all -m command -a true`, with as many forks as hosts: the peer at its fastest. */
export function ansibleCommandArgv(setup: AnsibleSetup, command: string): string[] {
  return [
    'ansible',
    'bench',
    '-i',
    setup.inventory,
    '-m',
    'command',
    '-a',
    command,
    '--forks',
    String(setup.hosts.length),
  ];
}

/** `ansible localhost -m setup`: Ansible's own facts gathering, the peer of `rankd facts`. */
export function ansibleSetupArgv(setup: AnsibleSetup): string[] {
  return ['ansible', 'localhost', '-i', setup.inventory, '-c', 'local', '-m', 'setup'];
}
