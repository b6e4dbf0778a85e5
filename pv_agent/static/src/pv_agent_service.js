import { reactive } from "@odoo/owl";
import { _t } from "@web/core/l10n/translation";
import { registry } from "@web/core/registry";
import { session } from "@web/session";

export const BUS_TYPE = "pv_agent/answer";
const MODEL = "pv_agent.conversation";

/**
 * The panel's state, kept outside the components so that it survives closing the panel,
 * and the only place that talks to the server. The bus tells it where a waiting question
 * stands (queue position, sources found, the model writing, checking, a second attempt),
 * applied to the shown question at once, and when an answer (or a failure) is stored; it
 * then reloads that conversation.
 */
export const pvAgentService = {
    dependencies: ["bus_service", "orm", "action", "notification"],
    start(env, { bus_service: bus, orm, action, notification }) {
        const info = session.pv_agent || null;
        const state = reactive({
            enabled: Boolean(info),
            isManager: Boolean(info?.is_manager),
            botPartnerId: info?.bot_partner_id || false,
            open: false,
            showHistory: false,
            loaded: false,
            conversation: null, // {id, name, origin, messages: [...]}
            conversations: [],
            unread: 0,
            sending: false,
        });

        let lastLoad = 0;
        // The conversation of the question just asked, while the panel still shows "new": an
        // answer can arrive over the bus before the panel has loaded it (a stored checked answer
        // comes with the asking request itself), and must then load that conversation, not none.
        let askedConversationId = false;
        async function load(conversationId) {
            const mine = ++lastLoad;
            const data = await orm.call(MODEL, "panel_load", [], {
                conversation_id: conversationId === undefined ? null : conversationId,
            });
            if (mine !== lastLoad) {
                return; // a later load (after an answer, a vote, …) is under way: it wins
            }
            state.conversation = data.conversation || null;
            state.conversations = data.conversations;
            state.loaded = true;
        }

        async function toggle() {
            state.open = !state.open;
            if (state.open) {
                state.unread = 0;
                await load(state.loaded ? state.conversation?.id || false : undefined);
            }
        }

        async function ask(question) {
            const text = (question || "").trim();
            if (!text || state.sending) {
                return false;
            }
            state.sending = true;
            try {
                const result = await orm.call(MODEL, "action_ask", [text], {
                    conversation_id: state.conversation?.id || false,
                });
                askedConversationId = result.conversation_id;
                await load(result.conversation_id);
                return true;
            } finally {
                state.sending = false;
            }
        }

        function newConversation() {
            askedConversationId = false;
            state.conversation = null;
            state.showHistory = false;
        }

        async function openConversation(id) {
            askedConversationId = false;
            state.showHistory = false;
            await load(id);
        }

        async function vote(answer, value) {
            const next = answer.vote === value ? false : value;
            answer.vote = next; // at once; the reload below brings the stored state
            await orm.call("pv_agent.message", "action_vote", [[answer.id], next]);
            await load(state.conversation?.id || false);
        }

        async function suggestCorrection(answer, entryRecordId, text) {
            await orm.call("pv_agent.message", "action_suggest_correction", [[answer.id], entryRecordId, text]);
            notification.add(_t("Thank you – your suggestion has been passed on to the PV-Agent managers."), {
                type: "success",
            });
        }

        async function reanswer(answer) {
            const result = await orm.call("pv_agent.message", "action_reanswer", [[answer.id]]);
            await load(result.conversation_id);
        }

        async function answerFresh(answer) {
            // beside a reused answer: the model answers again, the stored answer is not taken
            const result = await orm.call("pv_agent.message", "action_answer_fresh", [[answer.id]]);
            await load(result.conversation_id);
        }

        function openAnswer(messageId) {
            if (messageId) {
                action.doAction({
                    type: "ir.actions.act_window",
                    res_model: "pv_agent.message",
                    res_id: messageId,
                    views: [[false, "form"]],
                });
            }
        }

        async function cancel(question) {
            question.cancel_requested = true; // at once; the bus brings the outcome
            await orm.call("pv_agent.message", "action_cancel", [[question.id]]);
            await load(state.conversation?.id);
        }

        /** A progress push for a question of the shown conversation: update it in place. */
        function applyProgress(payload) {
            const conv = state.conversation;
            if (!conv || conv.id !== payload.conversation_id) {
                return;
            }
            const question = conv.messages.find((m) => m.id === payload.question_id);
            if (!question || !question.pending) {
                return;
            }
            const p = payload.progress;
            Object.assign(question, {
                progress: p.stage,
                progress_detail: p.detail,
                sources: p.sources,
                queue_position: p.queue_position,
                cancel_requested: p.cancel_requested,
            });
        }

        async function retry(question) {
            await orm.call("pv_agent.message", "action_retry", [[question.id]]);
            await load(state.conversation?.id);
        }

        function openEntry(recordId) {
            if (recordId) {
                action.doAction({
                    type: "ir.actions.act_window",
                    res_model: "pv_agent.entry",
                    res_id: recordId,
                    views: [[false, "form"]],
                });
            }
        }

        async function openChat() {
            const store = env.services["mail.store"];
            if (store && state.botPartnerId) {
                const chat = await store.joinChat(state.botPartnerId);
                if (store.discuss?.isActive) {
                    chat?.setAsDiscussThread(); // in the Discuss app, threads open in its main view
                } else {
                    await chat?.openChatWindow({ focus: true });
                }
                state.open = false;
            }
        }

        if (info) {
            bus.subscribe(BUS_TYPE, (payload) => {
                if (payload.progress) {
                    applyProgress(payload); // not an answer yet: no reload, no unread dot
                    return;
                }
                if (payload.origin_model && payload.origin_model !== "discuss.channel") {
                    // PV-Agent answered in a chatter: show its note if that chatter is open
                    const thread = env.services["mail.store"]?.Thread.get({
                        model: payload.origin_model,
                        id: payload.origin_res_id,
                    });
                    thread?.fetchNewMessages();
                }
                if (state.open) {
                    load(state.conversation?.id || askedConversationId || false); // the answer lands where it belongs
                } else {
                    state.unread++;
                }
            });
            bus.start();
        }

        return { state, load, toggle, ask, newConversation, openConversation, vote, suggestCorrection, retry,
                 cancel, reanswer, answerFresh, openAnswer, openEntry, openChat };
    },
};

registry.category("services").add("pv_agent", pvAgentService);
