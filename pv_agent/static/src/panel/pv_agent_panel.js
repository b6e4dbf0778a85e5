import { Component, markup, onPatched, useRef, useState } from "@odoo/owl";
import { _t } from "@web/core/l10n/translation";
import { registry } from "@web/core/registry";
import { useService } from "@web/core/utils/hooks";
import { session } from "@web/session";

/** One answer: state line, safe HTML body, citation chips, rating and correction form. */
export class PvAgentAnswer extends Component {
    static template = "pv_agent.Answer";
    static props = { message: Object };

    setup() {
        this.pvAgent = useService("pv_agent");
        this.correction = useState({ open: false, entry: false, text: "", sending: false });
        this.drift = useState({ open: false });
    }

    /** The unified diff of a changed source, line by line with a class for added/removed lines. */
    diffLines(diff) {
        return (diff || "")
            .split("\n")
            .filter((line) => !line.startsWith("---") && !line.startsWith("+++"))
            .map((text) => ({
                text,
                cls: text.startsWith("+")
                    ? "o_pv_agent_diff_add"
                    : text.startsWith("-")
                      ? "o_pv_agent_diff_del"
                      : text.startsWith("@@")
                        ? "text-muted"
                        : "",
            }));
    }

    get html() {
        return markup(this.props.message.html || "");
    }

    onBodyClick(ev) {
        // citation links inside the answer open the entry in the web client, not a new page
        const link = ev.target.closest("a[data-pv-entry]");
        if (link) {
            ev.preventDefault();
            const recordId = parseInt(link.getAttribute("href").split("/").pop(), 10);
            this.pvAgent.openEntry(recordId);
        }
    }

    openCorrection() {
        const first = this.props.message.citations.find((c) => c.record_id);
        Object.assign(this.correction, { open: true, entry: first ? first.record_id : false, text: "" });
    }

    async sendCorrection() {
        if (!this.correction.text.trim() || !this.correction.entry) {
            return;
        }
        this.correction.sending = true;
        try {
            await this.pvAgent.suggestCorrection(this.props.message, parseInt(this.correction.entry, 10),
                                                 this.correction.text);
            this.correction.open = false;
        } finally {
            this.correction.sending = false;
        }
    }
}

/** The panel: the clerk's current conversation, earlier ones, and the question box. */
export class PvAgentPanel extends Component {
    static template = "pv_agent.Panel";
    static components = { PvAgentAnswer };
    static props = {};

    setup() {
        this.pvAgent = useService("pv_agent");
        this.state = useState(this.pvAgent.state);
        this.input = useState({ text: "" });
        this.messagesRef = useRef("messages");
        this.textareaRef = useRef("textarea");
        this.lastCount = 0;
        onPatched(() => {
            const count = this.state.conversation?.messages.length || 0;
            if (this.messagesRef.el && count !== this.lastCount) {
                this.messagesRef.el.scrollTop = this.messagesRef.el.scrollHeight;
            }
            this.lastCount = count;
        });
    }

    get messages() {
        return this.state.conversation?.messages || [];
    }

    get placeholder() {
        return _t("Ask a payroll question … (Enter sends, Shift+Enter new line)");
    }

    originLabel(origin) {
        return { discuss: _t("Discuss"), chatter: _t("Chatter") }[origin] || "";
    }

    formatDate(value) {
        return value ? value.slice(0, 16) : "";
    }

    /** Where a waiting question stands, in one line (the engine words a second attempt's reason). */
    progressText(message) {
        if (message.cancel_requested) {
            return _t("Cancelling – stops before the next call of the language model …");
        }
        switch (message.progress) {
            case "sources":
                return _t("Sources found – the language model is about to write …");
            case "writing":
                return _t("The language model is writing …");
            case "checking":
                return _t("Checking against the sources …");
            case "rewriting": {
                const detail = message.progress_detail || "";
                return detail ? detail.charAt(0).toUpperCase() + detail.slice(1) + " …" : _t("Second attempt …");
            }
            default:
                return message.queue_position
                    ? _t("In the queue (position %s)", message.queue_position)
                    : _t("In the queue …");
        }
    }

    onKeydown(ev) {
        if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
            ev.preventDefault();
            this.send();
        }
    }

    async send() {
        const text = this.input.text;
        if (!text.trim()) {
            return;
        }
        this.input.text = "";
        const sent = await this.pvAgent.ask(text);
        if (!sent) {
            this.input.text = text;
        }
        this.textareaRef.el?.focus();
    }

    newConversation() {
        this.pvAgent.newConversation();
        this.textareaRef.el?.focus();
    }
}

export class PvAgentPanelContainer extends Component {
    static template = "pv_agent.PanelContainer";
    static components = { PvAgentPanel };
    static props = {};

    setup() {
        this.state = useState(useService("pv_agent").state);
    }
}

/** The systray icon: opens and closes the panel; a dot tells of answers that arrived meanwhile. */
export class PvAgentSystray extends Component {
    static template = "pv_agent.Systray";
    static props = {};

    setup() {
        this.pvAgent = useService("pv_agent");
        this.state = useState(this.pvAgent.state);
    }
}

registry.category("main_components").add("pv_agent.Panel", { Component: PvAgentPanelContainer });
registry.category("systray").add(
    "pv_agent.systray",
    { Component: PvAgentSystray, isDisplayed: () => Boolean(session.pv_agent) },
    { sequence: 25 }
);
