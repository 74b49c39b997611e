import { CONFIG_SETTINGS } from './config-schema';

/** `--help`: every setting with its flag, environment twin, default and meaning, from the schema. */
export function helpText(): string {
  const lines = [
    'Usage: cohort [--name value | --name=value]...',
    '',
    'Kafka-style consumer groups and delayed operations, as a gRPC service.',
    'Every flag has a COHORT_* environment twin. Flags win over the environment, which wins over the',
    'defaults. Exits with status 2, listing every problem, when the configuration is invalid.',
    '',
    'Settings:',
  ];
  for (const spec of CONFIG_SETTINGS) {
    const shown = String(spec.defaultValue);
    if (spec.isEnvOnly === true) {
      lines.push(`  ${spec.env}=${spec.valueName}`);
      lines.push(`      environment only (no flag), default ${shown === '' ? 'none' : shown}`);
    } else {
      const usage =
        spec.kind === 'boolean'
          ? `${spec.flag}[=true|false]`
          : spec.kind === 'clockMode'
            ? `${spec.flag}[=${spec.valueName}]`
            : `${spec.flag} ${spec.valueName}`;
      lines.push(`  ${usage}`);
      lines.push(`      env ${spec.env}, default ${shown === '' ? 'none' : shown}`);
    }
    if (spec.kafkaName !== undefined) lines.push(`      Kafka: ${spec.kafkaName}`);
    lines.push(...wrap(spec.description, 100, '      '));
  }
  lines.push('  -h, --help', '      Print this text and exit.', '');
  return lines.join('\n');
}

function wrap(text: string, width: number, indent: string): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      out.push(indent + line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') out.push(indent + line);
  return out;
}
