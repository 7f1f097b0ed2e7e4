// Compiled, never run (npm run check: tsc -p tsconfig.test.json): what a TypeScript user writes
// type-checks against the package's declarations, and wrong actions do not.
import { Client, type ProvincesAction, type ServerMessage, type conquest, type MatchState, type ProvincesView } from "@bannerfall/client";

export async function typed(client: Client): Promise<void> {
  const match = client.connect<"provinces">("m");
  match.on("state", (s: MatchState<ProvincesView>) => {
    const turn: number = s.view.turn;
    const deadline: number | null = s.prompts[0]?.deadline_at ?? null;
    void turn; void deadline;
  });
  match.on("events", (events) => events.forEach((e) => { const v: number = e.v; void v; }));
  const end: ProvincesAction = { type: "end_turn" };
  await match.act(end);
  // @ts-expect-error: not a Provinces action
  await match.act({ type: "orders", attack: [] });
  const ended = await match.play(() => ({ type: "end_turn" }));
  const reason: string = ended.outcome.reason;
  void reason;
  const orders: conquest.ConquestAction = { type: "orders", attack: [1] };
  void orders;
  const m = {} as ServerMessage;
  if (m.type === "delta") { const base: number = m.base; void base; }
}
