import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";

const root = join(import.meta.dirname, "../..");

/** A compose service's `environment:` as written: a name mapped to its value, or to null (no value). */
export function composeEnvironment(service: string): Record<string, string | null> {
  const compose = parseYaml(readFileSync(join(root, "compose.yaml"), "utf8")) as { services?: Record<string, { environment?: unknown }> };
  const environment = compose.services?.[service]?.environment;
  if (environment === undefined) throw new Error(`compose.yaml has no environment for the service ${service}`);
  if (Array.isArray(environment)) {
    // The list form: NAME=value, or NAME alone.
    return Object.fromEntries(
      environment.map((entry: unknown) => {
        const text = String(entry);
        const eq = text.indexOf("=");
        return eq < 0 ? [text, null] : [text.slice(0, eq), text.slice(eq + 1)];
      }),
    );
  }
  if (typeof environment !== "object" || environment === null) throw new Error(`environment of ${service} is neither a mapping nor a list`);
  return Object.fromEntries(Object.entries(environment).map(([name, value]) => [name, value === null ? null : String(value)]));
}

/**
 * The environment Compose gives the container, as Compose resolves it (docs.docker.com,
 * "Set environment variables within your container's environment"; compose-go#654): a name
 * without a value takes the shell's or the project's .env value and is unset in the container
 * when neither has it; `${NAME:-default}` and `${NAME}` interpolate from the same place.
 */
export function resolveComposeEnvironment(service: string, from: Record<string, string | undefined>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(composeEnvironment(service))) {
    if (value === null) {
      const given = from[name];
      if (given !== undefined) result[name] = given;
      continue;
    }
    result[name] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, variable: string, fallback: string | undefined) => {
      const given = from[variable];
      return given !== undefined && given !== "" ? given : (fallback ?? "");
    });
  }
  return result;
}
