import { registry } from "@web/core/registry";

// Prompt injection reaching the browser (issue 7): an answer (and a question, and an entry) full of
// <script>, <img onerror>, javascript: links, <svg onload>, <details ontoggle>, <iframe srcdoc> and
// raw tags. Wherever PV-Agent shows them — the systray panel, its history list, a chatter note, a
// Discuss chat, the managers' review form — they must appear as text and nothing may run:
// every payload would set window.__pwned.

const ACTIVE = "script, img, svg, iframe, details, object, embed, b, a[href^='javascript'], " +
    "[onerror], [onload], [onmouseover], [ontoggle], [srcdoc]";

function checkNothingRan() {
    if (window.__pwned !== undefined) {
        throw new Error(`script from PV-Agent content ran: window.__pwned = ${window.__pwned}`);
    }
}

function checkInert(selector) {
    return {
        trigger: selector,
        content: `no element from the hostile text inside ${selector}`,
        run() {
            for (const el of document.querySelectorAll(selector)) {
                const bad = el.querySelector(ACTIVE);
                if (bad) {
                    throw new Error(`hostile markup became an element: ${bad.outerHTML.slice(0, 200)}`);
                }
            }
        },
    };
}

function waitThenCheck() {
    // an <img src=x onerror> fires when the image fails to load: give it time
    return {
        trigger: "body",
        content: "a second later, still nothing ran",
        async run() {
            await new Promise((resolve) => setTimeout(resolve, 1000));
            checkNothingRan();
        },
    };
}

registry.category("web_tour.tours").add("pv_agent_injection_panel", {
    url: "/odoo",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer:contains('<script>'):contains('onerror=')",
            content: "the answer's markup is shown as text",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer:contains('javascript:'):contains('<iframe srcdoc=')",
            content: "links and frames too",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer a.o_pv_agent_cite[data-pv-entry='pv-sv-01']",
            content: "while the real citations are links",
        },
        checkInert(".o_pv_agent_panel .o_pv_agent_answer"),
        checkInert(".o_pv_agent_panel .o_pv_agent_state"),
        checkInert(".o_pv_agent_panel .o_pv_agent_citations"),
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_question .o_pv_agent_bubble:contains('<img src=x')",
            content: "the clerk's own hostile question, as text",
        },
        checkInert(".o_pv_agent_panel .o_pv_agent_question"),
        waitThenCheck(),
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_history_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_history_item:contains('<img src=x')",
            content: "the conversation's title in the history list, as text",
        },
        checkInert(".o_pv_agent_panel .o_pv_agent_history"),
        waitThenCheck(),
    ],
});

registry.category("web_tour.tours").add("pv_agent_injection_chatter", {
    steps: () => [
        {
            trigger: ".o-mail-Message-body:contains('onerror='):not(:contains('PV-Agent panel'))",
            content: "the clerk's hostile question in the chatter shows the markup as text",
        },
        {
            trigger: ".o-mail-Message-body:contains('in the PV-Agent panel')",
            content: "PV-Agent's note points to the panel (issue 29), no answer text in the chatter",
        },
        checkInert(".o-mail-Message-body"),
        waitThenCheck(),
    ],
});

registry.category("web_tour.tours").add("pv_agent_injection_discuss", {
    steps: () => [
        {
            trigger: ".o-mail-Message .o-mail-Message-body:contains('<script>'):contains('onerror=')",
            content: "PV-Agent's answer in the Discuss chat shows the markup as text",
        },
        checkInert(".o-mail-Message-body"),
        waitThenCheck(),
    ],
});

registry.category("web_tour.tours").add("pv_agent_injection_review", {
    steps: () => [
        {
            trigger: ".o_form_view .o_field_widget[name='answer_html']:contains('<script>')",
            content: "the review shows the answer's markup as text",
        },
        {
            trigger: ".o_form_view .o_field_widget[name='cited_html']:contains('<script>')",
            content: "and the hostile entry's markup as text",
        },
        checkInert(".o_form_view .o_field_widget[name='answer_html']"),
        checkInert(".o_form_view .o_field_widget[name='cited_html']"),
        checkInert(".o_form_view .o_field_widget[name='text']"),
        waitThenCheck(),
    ],
});
