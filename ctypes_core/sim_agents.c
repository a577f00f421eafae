/*
 * The agents of a learning policy, seen from the simulator: finding them,
 * saving and loading them (agent_file.c's format), and the background trainer
 * thread that trains and syncs them off the decision path (live mode).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include "sim_internal.h"

static int sim_agents(const struct hbl_sim *s, struct hbl_agent **ag)
{
    return s->ops->agents ? s->ops->agents(s->pstate, ag) : 0;
}

/* The background trainer: one thread for the policy's agents, which trains and
 * syncs each when due and otherwise sleeps 5 ms.  With a budget (a share of one
 * CPU, 0 < budget < 1) it sleeps after each step long enough that the step's CPU
 * time is at most that share of the wall time since the step began: due steps are
 * then skipped, not queued (an agent trains on its latest decisions when it next
 * can).  The simulator never trains here: its schedule is hbl_agent_tick's. */
struct hbl_trainer {
    pthread_t th;
    int stop, n;
    double budget;
    struct hbl_agent *ag[4];
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sleep `s` seconds in slices of at most 50 ms, less if the trainer is stopped meanwhile. */
static void trainer_sleep(struct hbl_trainer *t, double s)
{
    while (s > 0 && !__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        double d = s < 0.05 ? s : 0.05;
        struct timespec ts = { 0, (long)(d * 1e9) };
        nanosleep(&ts, NULL);
        s -= d;
    }
}

static void *trainer_main(void *arg)
{
    struct hbl_trainer *t = arg;
    const struct timespec idle = { 0, 5000000 };
    int limited = t->budget > 0 && t->budget < 1;
    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        int did = 0;
        double c0 = limited ? thread_cpu_s() : 0;
        for (int i = 0; i < t->n; i++) did |= hbl_agent_background(t->ag[i]);
        if (!did) nanosleep(&idle, NULL);
        else if (limited) trainer_sleep(t, (thread_cpu_s() - c0) * (1 / t->budget - 1));
    }
    return NULL;
}

int32_t hbl_sim_background_training(struct hbl_sim *s, int32_t on, double budget, char *err, int32_t errlen)
{
    if (!on) {
        struct hbl_trainer *t = s->trainer;
        if (!t) return 0;
        __atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
        pthread_join(t->th, NULL);
        for (int i = 0; i < t->n; i++) hbl_agent_set_background(t->ag[i], 0);
        free(t);
        s->trainer = NULL;
        return 0;
    }
    if (s->trainer) return 0;
    struct hbl_trainer *t = calloc(1, sizeof(*t));
    if (!t) { snprintf(err, errlen, "out of memory"); return -1; }
    t->n = sim_agents(s, t->ag);
    t->budget = budget;
    if (!t->n) { free(t); return 0; }   /* nothing learns */
    for (int i = 0; i < t->n; i++) hbl_agent_set_background(t->ag[i], 1);
    int rc = pthread_create(&t->th, NULL, trainer_main, t);
    if (rc) {
        for (int i = 0; i < t->n; i++) hbl_agent_set_background(t->ag[i], 0);
        free(t);
        snprintf(err, errlen, "cannot start the training thread: %s", strerror(rc));
        return -1;
    }
    s->trainer = t;
    return 0;
}

struct hbl_agent *hbl_sim_agent(const struct hbl_sim *s, int32_t i)
{
    struct hbl_agent *ag[4];
    int n = sim_agents(s, ag);
    return i >= 0 && i < n ? ag[i] : NULL;
}

int32_t hbl_sim_save_agents(const struct hbl_sim *s, const char *path, char *err, int32_t errlen)
{
    struct hbl_agent *ag[4];
    int n = sim_agents(s, ag);
    if (!n) { snprintf(err, errlen, "policy %s has no agents to save", s->ops->name); return -1; }
    return hbl_agents_save(path, s->ops->name, ag, n, err, errlen);
}

int32_t hbl_sim_load_agents(struct hbl_sim *s, const char *path, char *err, int32_t errlen)
{
    struct hbl_agent *ag[4];
    int n = sim_agents(s, ag);
    if (!n) { snprintf(err, errlen, "policy %s has no agents to load", s->ops->name); return -1; }
    return hbl_agents_load(path, s->ops->name, ag, n, err, errlen);
}
