/* cd_task.h — a unit of work handed to another thread's loop: intrusive
 * (the caller embeds it), so handing it over never allocates. */
#ifndef CD_TASK_H
#define CD_TASK_H

typedef struct cd_task cd_task;
struct cd_task {
  void (*run)(cd_task *t);
  cd_task *next; /* the receiving loop's */
};

#endif
