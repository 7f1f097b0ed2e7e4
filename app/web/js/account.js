// Accounts (docs/protocol.md "Accounts"): claim this guest with a username and password, sign in
// from another browser, list and revoke this player's tokens, sign out everywhere.
import { api, ApiError, savedPlayer, savePlayer } from "./api.js";
import { h, replace, fmtTime, toast } from "./dom.js";

function errorText(exc) {
  return exc instanceof ApiError ? `${exc.message} (${exc.code})` : String(exc?.message || exc);
}

/** The sign-in panel for returning players (shown beside the guest form). */
export function signInPanel(onDone) {
  const user = h("input#signin-username", { type: "text", maxLength: 24, placeholder: "username", autocomplete: "username", required: true });
  const pass = h("input#signin-password", { type: "password", maxLength: 128, placeholder: "password", autocomplete: "current-password", required: true });
  const error = h("p.error#signin-error");
  return h("form.card-panel.welcome#signin-form", {
    on: {
      submit: async (e) => {
        e.preventDefault();
        error.textContent = "";
        try {
          const out = await api("POST", "/accounts/sign-in",
            { username: user.value.trim(), password: pass.value, label: browserLabel() }, null);
          savePlayer({ token: out.token, player: out.player, username: out.username });
          onDone();
        } catch (exc) {
          error.textContent = errorText(exc);
        }
      },
    },
  },
  h("h2", "Sign in"),
  h("p.muted.small", "Claimed your player on another device? Sign in with its username."),
  h("label", "Username ", user),
  h("label", "Password ", pass),
  h("button#signin-go", { type: "submit" }, "Sign in"),
  error);
}

function browserLabel() {
  const ua = navigator.userAgent || "";
  const name = /Firefox\//.test(ua) ? "Firefox" : /Edg\//.test(ua) ? "Edge" : /Chrom/.test(ua) ? "Chromium" : /Safari\//.test(ua) ? "Safari" : "browser";
  return `${name} (web)`;
}

/** #/account: the account of this player. */
export async function renderAccount(root, { stillHere }) {
  const me = savedPlayer();
  const box = h("section.card-panel.account#account");
  replace(root, box);
  let account;
  try {
    account = await api("GET", "/accounts/me");
  } catch (exc) {
    replace(box, h("p.error", errorText(exc)));
    return;
  }
  if (!stillHere()) return;
  if (!account.username) {
    replace(box, h("h2", "Keep this player"), claimForm(() => renderAccount(root, { stillHere })));
    return;
  }
  savePlayer({ ...me, username: account.username });
  window.dispatchEvent(new Event("bannerfall:player"));
  const tokens = h("div#token-list");
  replace(box,
    h("h2", "Account"),
    h("p", "Signed in as ", h("strong#account-username", account.username), " — playing as ", h("strong", account.player.name), "."),
    h("p", h("a.button.small", { href: `#/player/${account.player.id}` }, "Your profile")),
    h("h3", "Signed-in devices"),
    tokens,
    h("button#sign-out-everywhere.danger", {
      type: "button",
      on: {
        click: async () => {
          try {
            await api("POST", "/accounts/sign-out-everywhere", {});
          } catch (exc) {
            toast(errorText(exc), "error");
            return;
          }
          savePlayer(null);
          location.hash = "#/";
          location.reload();
        },
      },
    }, "Sign out everywhere"));
  await showTokens(tokens);
}

async function showTokens(box) {
  let list;
  try {
    list = (await api("GET", "/accounts/tokens")).items;
  } catch (exc) {
    replace(box, h("p.error", errorText(exc)));
    return;
  }
  replace(box, h("table.list",
    h("thead", h("tr", h("th", "Device"), h("th", "Since"), h("th", ""))),
    h("tbody", list.map((t) => h("tr", { dataset: { token: t.id } },
      h("td", t.label || "device", t.current ? h("span.muted", " (this browser)") : null),
      h("td", fmtTime(t.created_at)),
      h("td", t.current ? null : h("button.small.revoke", {
        type: "button",
        on: {
          click: async () => {
            try {
              await api("DELETE", `/accounts/tokens/${encodeURIComponent(t.id)}`);
              await showTokens(box);
            } catch (exc) {
              toast(errorText(exc), "error");
            }
          },
        },
      }, "Sign out")))))));
}

function claimForm(onDone) {
  const user = h("input#claim-username", { type: "text", maxLength: 24, placeholder: "username", autocomplete: "username", required: true });
  const pass = h("input#claim-password", { type: "password", maxLength: 128, minLength: 8, placeholder: "8 characters or more", autocomplete: "new-password", required: true });
  const error = h("p.error#claim-error");
  return h("form#claim-form", {
    on: {
      submit: async (e) => {
        e.preventDefault();
        error.textContent = "";
        try {
          const out = await api("POST", "/accounts/claim", { username: user.value.trim(), password: pass.value });
          savePlayer({ ...savedPlayer(), username: out.username });
          window.dispatchEvent(new Event("bannerfall:player"));  // the top bar: no longer a guest
          onDone();
        } catch (exc) {
          error.textContent = errorText(exc);
        }
      },
    },
  },
  h("p.muted", "A guest lives in this browser only. Choose a username and password to play from other devices too; your name, specials and rating stay."),
  h("label", "Username ", user),
  h("label", "Password ", pass),
  h("button#claim-go.primary", { type: "submit" }, "Claim this player"),
  error);
}
