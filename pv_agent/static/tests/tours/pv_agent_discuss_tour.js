import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// A clerk opens the Discuss chat with PV-Agent from the panel and asks there; PV-Agent's
// reply arrives in the chat window with the state and the citation as a link.
registry.category("web_tour.tours").add("pv_agent_discuss", {
    url: "/odoo/action-pv_agent.action_pv_agent_conversation",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_discuss",
            content: "open the Discuss chat with PV-Agent",
            run: "click",
        },
        {
            trigger: ".o-mail-ChatWindow:contains('PV-Agent') .o-mail-Composer-input",
            content: "a chat window with PV-Agent is open",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026?",
        },
        {
            trigger: ".o-mail-ChatWindow .o-mail-Composer-input",
            content: "Enter sends",
            async run(helpers) {
                this.anchor.focus();
                await helpers.press("Enter");
            },
        },
        {
            trigger: ".o-mail-ChatWindow .o-mail-Message:contains('Geringfügigkeitsgrenze 2026?')",
            content: "the question is posted",
        },
        {
            trigger: ".o-mail-ChatWindow .o-mail-Message:contains('Gefundene Quellen – Antwort wird erstellt') a[href*='/odoo/pv_agent.entry/']",
            content: "PV-Agent posts the sources found at once, labelled as such",
        },
        {
            trigger: ".o-mail-ChatWindow .o-mail-Message:contains('551,10'):not(:contains('Gefundene Quellen')) a[href*='/odoo/pv_agent.entry/']",
            content: "then edits that message into the answer, with links to the cited entries",
        },
        screenshot("discuss-chat", ".o-mail-ChatWindow .o-mail-Message:contains('551,10')"),
    ],
});

// A clerk mentions @PV-Agent in a contact's chatter; the record's readers need not be in the
// PV-Agent group, so the internal note points to the panel, where the answer is (issue 29).
registry.category("web_tour.tours").add("pv_agent_chatter", {
    steps: () => [
        {
            trigger: ".o-mail-Chatter button.o-mail-Chatter-logNote",
            content: "log a note",
            run: "click",
        },
        {
            trigger: ".o-mail-Chatter .o-mail-Composer-input",
            content: "the question, then @PV-Agent",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026? @PV-Ag",
        },
        {
            trigger: ".o-mail-Composer-suggestion:contains('PV-Agent')",
            content: "PV-Agent is suggested as a mention",
            run: "click",
        },
        {
            trigger: ".o-mail-Chatter .o-mail-Composer-send:enabled",
            run: "click",
        },
        {
            trigger: ".o-mail-Chatter .o-mail-Message:contains('in the PV-Agent panel'):not(:contains('551,10'))",
            content: "PV-Agent's note points to the panel; the answer is not in the chatter",
        },
        screenshot("chatter-note", ".o-mail-Chatter .o-mail-Message:contains('in the PV-Agent panel')"),
    ],
});

// A user without the PV-Agent group: no systray icon; their @PV-Agent note gets no reply.
registry.category("web_tour.tours").add("pv_agent_no_access", {
    steps: () => [
        {
            trigger: ".o_menu_systray",
            content: "the systray is there",
        },
        {
            trigger: ".o_menu_systray:not(:has(.o_pv_agent_systray_toggle))",
            content: "but without PV-Agent",
        },
        {
            trigger: ".o-mail-Chatter button.o-mail-Chatter-logNote",
            run: "click",
        },
        {
            trigger: ".o-mail-Chatter .o-mail-Composer-input",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026? @PV-Ag",
        },
        {
            trigger: ".o-mail-Composer-suggestion:contains('PV-Agent')",
            run: "click",
        },
        {
            trigger: ".o-mail-Chatter .o-mail-Composer-send:enabled",
            run: "click",
        },
        {
            trigger: ".o-mail-Chatter .o-mail-Message:contains('Geringfügigkeitsgrenze 2026?')",
            content: "the note is posted (the Python side checks that no reply follows)",
        },
    ],
});
