import { ensureSystemPackages } from './system-packages';

/** Debian's own Python, which has Debian's python3-kafka and python3-confluent-kafka. */
export const DEBIAN_PYTHON = '/usr/bin/python3';

/**
 * Makes sure the Kafka clients the tests run are installed: kcat and confluent-kafka (both librdkafka
 * 2.0.2 on Debian bookworm) and kafka-python 2.0.2, installing them with apt-get when it can, failing with
 * what to install otherwise (see ensureSystemPackages). KafkaJS is a devDependency. Call it from beforeAll,
 * with room for apt-get.
 */
export function ensureKafkaClientPackages(purpose: string): void {
  ensureSystemPackages(purpose, [
    { debianPackage: 'kcat', probe: ['kcat', '-V'] },
    { debianPackage: 'python3-kafka', probe: [DEBIAN_PYTHON, '-c', 'import kafka'] },
    { debianPackage: 'python3-confluent-kafka', probe: [DEBIAN_PYTHON, '-c', 'import confluent_kafka'] },
  ]);
}
